package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"
)

// startHTTP serves the example on a free loopback port, as run does, and
// stops it when the test ends. It returns the MCP endpoint's URL and the
// store, to look at what requests did.
func startHTTP(t *testing.T) (string, *store) {
	t.Helper()
	url, inst := startInstance(t)
	return url, inst.st
}

// startInstance is startHTTP that returns the instance it serves.
func startInstance(t *testing.T) (string, *instance) {
	t.Helper()
	st := newTestStore(t)
	a := newAdapter(st, quietLogger())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	inst := &instance{st: st, a: a}
	go func() { served <- serveHTTP(ctx, ln, inst, quietLogger()) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serveHTTP: %v", err)
			}
		case <-time.After(shutdownGrace + 5*time.Second):
			t.Error("serveHTTP did not return after the context ended")
		}
	})
	return "http://" + ln.Addr().String() + "/mcp", inst
}

// rawPOST sends one JSON-RPC message with the given headers.
func rawPOST(t *testing.T, url, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return doRaw(t, req)
}

func doRaw(t *testing.T, req *http.Request) (int, http.Header, string) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

const (
	initLegacy = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	// createAda is a write: it must never run for a refused request.
	createAda = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"customers_create","arguments":{"name":"Forged Ada","email":"forged@example.com"}}}`
)

// TestHTTPRefusesWhatTheTransportForbids drives the example as shipped with
// the requests a careful operator must refuse: a foreign Origin, session
// IDs never issued or already deleted, and a huge body. Each gets its
// status, and none creates a session or runs the write.
func TestHTTPRefusesWhatTheTransportForbids(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // after the server's own cleanup
	url, st := startHTTP(t)
	countForged := func() int {
		var n int
		if err := st.db.QueryRowContext(t.Context(), `SELECT count(*) FROM customers WHERE name = 'Forged Ada'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	legacy := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20251125}

	for _, origin := range []string{"http://evil.example", "null"} {
		status, hdr, body := rawPOST(t, url, initLegacy, map[string]string{"Origin": origin})
		if status != http.StatusForbidden || hdr.Get(server.HeaderKeySessionID) != "" || !strings.Contains(body, "not allowed") {
			t.Errorf("initialize from Origin %s: %d %q", origin, status, body)
		}
	}

	// A session ID the server never issued.
	forged := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20251125, server.HeaderKeySessionID: sessionIDPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAA"}
	if status, _, body := rawPOST(t, url, createAda, forged); status != http.StatusNotFound {
		t.Errorf("a never-issued session id: %d %q, want 404", status, body)
	}
	get, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range forged {
		get.Header.Set(k, v)
	}
	if status, _, _ := doRaw(t, get); status != http.StatusNotFound {
		t.Errorf("a GET stream for a never-issued session id: %d, want 404", status)
	}
	// A GET without a session is answered at once, not held open.
	get, _ = http.NewRequest(http.MethodGet, url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20251125)
	if status, _, _ := doRaw(t, get); status != http.StatusBadRequest {
		t.Errorf("a GET stream without a session id: %d, want 400", status)
	}

	// A real session works until it is deleted, then answers 404.
	status, hdr, body := rawPOST(t, url, initLegacy, legacy)
	id := hdr.Get(server.HeaderKeySessionID)
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q", status, body)
	}
	session := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20251125, server.HeaderKeySessionID: id}
	read := `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"app://customers_show/1"}}`
	if status, _, body := rawPOST(t, url, read, session); status != http.StatusOK || !strings.Contains(body, `"contents"`) {
		t.Fatalf("read on a live session: %d %q", status, body)
	}
	del, _ := http.NewRequest(http.MethodDelete, url, nil)
	for k, v := range session {
		del.Header.Set(k, v)
	}
	if status, _, _ := doRaw(t, del); status != http.StatusOK {
		t.Fatalf("DELETE: %d", status)
	}
	if status, _, body := rawPOST(t, url, createAda, session); status != http.StatusNotFound {
		t.Errorf("a deleted session id: %d %q, want 404", status, body)
	}
	if status, _, _ := doRaw(t, del.Clone(t.Context())); status != http.StatusNotFound {
		t.Errorf("a second DELETE of the session: %d, want 404", status)
	}

	// 100 MB, generated as it is sent: refused at the 4 MiB cap.
	req, _ := http.NewRequest(http.MethodPost, url, io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"`), io.LimitReader(zeroReader{}, 100<<20)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(b, []byte("too large")) {
			t.Errorf("a 100 MB body: %d %q, want 413", res.StatusCode, b)
		}
	} // else the server closed the connection while the client still sent: refused too

	if n := countForged(); n != 0 {
		t.Errorf("a refused request ran the write %d times", n)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestLoopbackOnlyRefusesRebinding: the live page shows the arguments of
// every live query, so it answers loopback only. A page on another site
// whose name the attacker rebinds to 127.0.0.1 reaches it from the
// operator's own browser, over loopback, with the attacker's name as Host:
// that must be refused, as mcp-go's localhost protection refuses it on /mcp.
func TestLoopbackOnlyRefusesRebinding(t *testing.T) {
	st := newTestStore(t)
	a := newAdapter(st, quietLogger())
	hs := httptest.NewServer(loopbackOnly(a.DebugHandler()))
	defer hs.Close()
	port := hs.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		host   string
		header string // a proxy's forwarding header, "" for none
		want   int
	}{
		{host: fmt.Sprintf("127.0.0.1:%d", port), want: http.StatusOK},
		{host: fmt.Sprintf("localhost:%d", port), want: http.StatusOK},
		{host: fmt.Sprintf("[::1]:%d", port), want: http.StatusOK},
		{host: "localhost", want: http.StatusOK},
		{host: fmt.Sprintf("evil.example:%d", port), want: http.StatusForbidden},
		{host: "evil.example", want: http.StatusForbidden},
		{host: fmt.Sprintf("192.0.2.1:%d", port), want: http.StatusForbidden},
		// A reverse proxy on this host (nginx names the upstream as Host
		// by default) passes both checks above but says whom it serves.
		{host: fmt.Sprintf("127.0.0.1:%d", port), header: "X-Forwarded-For", want: http.StatusForbidden},
		{host: fmt.Sprintf("127.0.0.1:%d", port), header: "Forwarded", want: http.StatusForbidden},
		{host: fmt.Sprintf("127.0.0.1:%d", port), header: "X-Real-Ip", want: http.StatusForbidden},
		{host: fmt.Sprintf("127.0.0.1:%d", port), header: "X-Forwarded-Host", want: http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, hs.URL, nil)
		req.Host = tc.host
		if tc.header != "" {
			req.Header.Set(tc.header, "203.0.113.9")
		}
		if status, _, _ := doRaw(t, req); status != tc.want {
			t.Errorf("Host %s, %s: %d, want %d", tc.host, tc.header, status, tc.want)
		}
	}
}
