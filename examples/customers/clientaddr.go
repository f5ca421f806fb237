package main

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/mcplive/adapter/middleware"
)

// The adapter caps the subscriptions of each client (256 by default), and
// tells clients apart by their session ID or, on 2026-07-28, which has no
// session, by their network address (middleware.DefaultKey). The example
// hands it the address of every request. Behind a load balancer that
// address is the balancer's, the same for every client: they would share
// one cap, the whole fleet's listen clients one budget per instance. With
// -trusted-proxy the example takes the client's address from the
// X-Forwarded-For header instead, but only on requests that come from
// those proxies: anyone else could write any address there.

// trustedProxies are the networks of the proxies, load balancers, whose
// X-Forwarded-For header the example believes.
type trustedProxies []netip.Prefix

// parseTrustedProxies parses -trusted-proxy: addresses or networks in CIDR
// notation, separated by commas ("10.0.0.0/24,127.0.0.1").
func parseTrustedProxies(s string) (trustedProxies, error) {
	var tp trustedProxies
	for field := range strings.SplitSeq(s, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		if p, err := netip.ParsePrefix(field); err == nil {
			tp = append(tp, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(field)
		if err != nil {
			return nil, fmt.Errorf("-trusted-proxy: %q is neither an IP address nor a network in CIDR notation (10.0.0.0/24)", field)
		}
		tp = append(tp, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return tp, nil
}

func (tp trustedProxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range tp {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is the address of the client r comes from: the peer's,
// unless the peer is a trusted proxy. Then it is the last address of
// X-Forwarded-For that is not a trusted proxy's: each proxy appends the
// address it was reached from, so that one was written by a proxy the
// example trusts, and whatever lies left of it by the client, who may have
// written anything. A request a trusted proxy sends without the header (a
// health check) comes from the proxy itself; so does one whose header
// holds something other than an address where the client's should be.
func (tp trustedProxies) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !tp.trusts(peer) {
		return r.RemoteAddr
	}
	var hops []string
	for _, line := range r.Header.Values("X-Forwarded-For") {
		for hop := range strings.SplitSeq(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	client := r.RemoteAddr
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := forwardedAddr(hops[i])
		if !ok {
			break
		}
		client = a.String()
		if !tp.trusts(a) {
			break
		}
	}
	return client
}

// forwardedAddr parses one X-Forwarded-For entry: an address, with a port
// or without ("203.0.113.7", "[2001:db8::1]:4711").
func forwardedAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// clientAddress hands next every request with its client's address in
// the context, where the adapter's client key finds it
// (middleware.RemoteAddrFrom); it does what middleware.RemoteAddrHandler
// does, and believes trusted proxies.
func clientAddress(tp trustedProxies, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(middleware.ContextWithRemoteAddr(r.Context(), tp.clientAddr(r))))
	})
}
