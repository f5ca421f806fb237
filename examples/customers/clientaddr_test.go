package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcplive/adapter/middleware"
)

func TestClientAddr(t *testing.T) {
	tp, err := parseTrustedProxies("127.0.0.1, 10.0.0.0/24,::1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		peer   string
		xff    []string // one entry a header line
		client string
	}{
		{"a client straight, no header", "198.51.100.7:4711", nil, "198.51.100.7:4711"},
		{"a client straight, lying", "198.51.100.7:4711", []string{"203.0.113.9"}, "198.51.100.7:4711"},
		{"a client straight from a trusted network's edge", "10.0.1.5:4711", []string{"203.0.113.9"}, "10.0.1.5:4711"},
		{"through the balancer", "127.0.0.1:5000", []string{"203.0.113.9"}, "203.0.113.9"},
		{"through the balancer, the client lying before it", "127.0.0.1:5000", []string{"192.0.2.1, 203.0.113.9"}, "203.0.113.9"},
		{"the balancer's own header line after the client's", "127.0.0.1:5000", []string{"192.0.2.1", "203.0.113.9"}, "203.0.113.9"},
		{"through two trusted proxies", "127.0.0.1:5000", []string{"203.0.113.9, 10.0.0.4"}, "203.0.113.9"},
		{"every hop trusted", "127.0.0.1:5000", []string{"10.0.0.3, 10.0.0.4"}, "10.0.0.3"},
		{"a health check of the balancer", "127.0.0.1:5000", nil, "127.0.0.1:5000"},
		{"garbage where the client should be", "127.0.0.1:5000", []string{"unknown"}, "127.0.0.1:5000"},
		{"garbage left of the client", "127.0.0.1:5000", []string{"unknown, 203.0.113.9"}, "203.0.113.9"},
		{"an address with a port", "127.0.0.1:5000", []string{"[2001:db8::1]:4711"}, "2001:db8::1"},
		{"an IPv4-mapped address", "[::ffff:127.0.0.1]:5000", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		{"over IPv6 loopback", "[::1]:5000", []string{"2001:db8::2"}, "2001:db8::2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.RemoteAddr = tt.peer
			for _, line := range tt.xff {
				r.Header.Add("X-Forwarded-For", line)
			}
			if got := tp.clientAddr(r); got != tt.client {
				t.Errorf("clientAddr = %q, want %q", got, tt.client)
			}
			var seen string
			clientAddress(tp, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				seen, _ = middleware.RemoteAddrFrom(r.Context())
			})).ServeHTTP(httptest.NewRecorder(), r)
			if seen != tt.client {
				t.Errorf("the handler put %q in the context, want %q", seen, tt.client)
			}
		})
	}
}

// TestClientAddrTrustsNobodyByDefault: without -trusted-proxy the peer is
// the client, whatever the header says.
func TestClientAddrTrustsNobodyByDefault(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	if got := trustedProxies(nil).clientAddr(r); got != "127.0.0.1:5000" {
		t.Errorf("clientAddr = %q, want the peer", got)
	}
}

func TestParseTrustedProxies(t *testing.T) {
	tp, err := parseTrustedProxies(" 10.0.0.7/24 ,,::ffff:192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{tp[0].String(), tp[1].String()}; len(tp) != 2 || got[0] != "10.0.0.0/24" || got[1] != "192.0.2.1/32" {
		t.Errorf("parsed %v, want [10.0.0.0/24 192.0.2.1/32]", tp)
	}
	if tp, err := parseTrustedProxies(""); err != nil || tp != nil {
		t.Errorf("the empty flag: %v, %v; want none", tp, err)
	}
	for _, bad := range []string{"localhost", "10.0.0.0/33", "10.0.0.1,lb.internal"} {
		_, err := parseTrustedProxies(bad)
		if err == nil || !strings.Contains(err.Error(), "-trusted-proxy") {
			t.Errorf("parseTrustedProxies(%q) = %v; want an error naming the flag", bad, err)
		}
	}
	_, err = parseTrustedProxies("10.0.0.1,lb.internal")
	if err == nil || !strings.Contains(err.Error(), `"lb.internal"`) {
		t.Errorf("the error %v does not name the bad entry", err)
	}
}
