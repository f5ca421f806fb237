package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// guardServer serves a live server through HTTPHandler with opts, and
// counts the sessions mcp-go registers and the runs of a write command.
type guardServer struct {
	url      string
	a        *Adapter
	sessions atomic.Int64
	writes   atomic.Int64
}

type touchArgs struct {
	ID int `json:"id"`
}

func newGuardServer(t *testing.T, opts ...HTTPOption) *guardServer {
	t.Helper()
	g := &guardServer{}
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(context.Context, server.ClientSession) { g.sessions.Add(1) })
	srv := server.NewMCPServer("guard", "1.0.0", server.WithHooks(hooks))
	g.a = Wrap(srv)
	Command(g.a, "items_touch", "A write.", func(ctx context.Context, args touchArgs) (int, error) {
		g.writes.Add(1)
		return args.ID, nil
	})
	hs := httptest.NewServer(g.a.HTTPHandler(server.NewStreamableHTTPServer(srv), opts...))
	t.Cleanup(hs.Close)
	g.url = hs.URL + "/mcp"
	return g
}

// guardRequest is one raw request: method, headers and a JSON-RPC body.
type guardRequest struct {
	method  string
	origin  string // "" for none
	version string // MCP-Protocol-Version, "" for none
	body    string
	header  map[string]string
}

func (g *guardServer) do(t *testing.T, r guardRequest) (status int, body []byte) {
	t.Helper()
	var rd io.Reader
	if r.body != "" {
		rd = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, g.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, r.version)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ = io.ReadAll(res.Body)
	return res.StatusCode, body
}

const (
	legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
)

// modernCall is a tools/call of items_touch on protocol 2026-07-28, with
// the headers that era requires.
func modernCall(origin string) guardRequest {
	params := `{"name":"items_touch","arguments":{"id":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`
	h := map[string]string{}
	for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MethodToolsCall, json.RawMessage(params)) {
		h[k] = v
	}
	return guardRequest{
		method: http.MethodPost, origin: origin, version: mcp.ProtocolVersion20260728, header: h,
		body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`,
	}
}

// wireError decodes the JSON-RPC error of a response body.
func wireErrorOf(t *testing.T, body []byte) *rpcError {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Error == nil {
		t.Fatalf("body %q is not a JSON-RPC error response", body)
	}
	if string(m.ID) != "null" {
		t.Fatalf("error response id %s, want null", m.ID)
	}
	return m.Error
}

func TestHTTPHandlerRefusesForeignOrigins(t *testing.T) {
	g := newGuardServer(t, WithAllowedOrigins("https://app.example.com", "null"))
	var hostOrigin string // the server's own origin
	{
		u := strings.TrimSuffix(g.url, "/mcp")
		hostOrigin = u
	}
	refused := []guardRequest{
		{method: http.MethodPost, origin: "http://evil.example", body: legacyInit},
		{method: http.MethodPost, origin: "https://app.example.com.evil.example", body: legacyInit},
		{method: http.MethodPost, origin: "https://app.example.com:8443", body: legacyInit}, // another port is another origin
		{method: http.MethodPost, origin: "http://app.example.com", body: legacyInit},       // another scheme too
		{method: http.MethodGet, origin: "http://evil.example", version: mcp.ProtocolVersion20251125},
		{method: http.MethodDelete, origin: "http://evil.example", version: mcp.ProtocolVersion20251125},
		modernCall("http://evil.example"),
		modernCall("http://127.0.0.1.evil.example"),
	}
	for _, r := range refused {
		t.Run("refused/"+r.method+"/"+r.origin, func(t *testing.T) {
			sessions, writes := g.sessions.Load(), g.writes.Load()
			status, body := g.do(t, r)
			if status != http.StatusForbidden {
				t.Fatalf("status %d (%s), want 403", status, body)
			}
			e := wireErrorOf(t, body)
			if e.Code != mcp.INVALID_REQUEST || !strings.Contains(e.Message, r.origin) {
				t.Fatalf("error %+v: want -32600 naming the origin", e)
			}
			if g.sessions.Load() != sessions || g.writes.Load() != writes {
				t.Fatal("a refused request created a session or ran a command")
			}
		})
	}

	allowed := []string{"", hostOrigin, "http://localhost:6274", "http://127.0.0.1:3000", "http://[::1]:5173", "https://app.example.com", "null"}
	for _, origin := range allowed {
		t.Run("allowed/"+origin, func(t *testing.T) {
			status, body := g.do(t, guardRequest{method: http.MethodPost, origin: origin, body: legacyInit})
			if status != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
				t.Fatalf("legacy initialize: status %d, %s", status, body)
			}
			writes := g.writes.Load()
			status, body = g.do(t, modernCall(origin))
			if status != http.StatusOK || bytes.Contains(body, []byte(`"isError":true`)) || g.writes.Load() != writes+1 {
				t.Fatalf("modern tools/call: status %d, %s", status, body)
			}
		})
	}
}

// With WithAllowedHosts, a request for any other Host is refused before
// anything runs, whatever its Origin: the DNS rebinding that the Origin
// check cannot see, where the attacker's name is both.
func TestHTTPHandlerChecksTheHost(t *testing.T) {
	a := Wrap(server.NewMCPServer("t", "1"))
	var served atomic.Int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	hs := httptest.NewServer(a.HTTPHandler(next, WithAllowedHosts("mcp.internal", "Other.Internal:8443", "[::1]", "10.0.0.5")))
	t.Cleanup(hs.Close)
	do := func(host, origin string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(legacyInit))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, body
	}
	for _, host := range []string{"mcp.internal", "MCP.internal:9000", "other.internal:8443", "[::1]:3000", "10.0.0.5:80"} {
		if status, body := do(host, ""); status != http.StatusNoContent {
			t.Errorf("Host %s: status %d (%s), want it served", host, status, body)
		}
	}
	for _, r := range []struct{ host, origin string }{
		{"evil.example", ""},
		{"evil.example:8080", "http://evil.example:8080"}, // rebinding: Origin and Host agree
		{"other.internal", ""},                            // listed with a port only
		{"other.internal:8444", ""},
		{"mcp.internal.evil.example", ""},
		{"127.0.0.1", ""},
	} {
		n := served.Load()
		status, body := do(r.host, r.origin)
		if status != http.StatusForbidden {
			t.Errorf("Host %s: status %d (%s), want 403", r.host, status, body)
			continue
		}
		if e := wireErrorOf(t, body); e.Code != mcp.INVALID_REQUEST || !strings.Contains(e.Message, r.host) {
			t.Errorf("Host %s: error %+v, want -32600 naming the host", r.host, e)
		}
		if served.Load() != n {
			t.Errorf("Host %s: refused, yet served", r.host)
		}
	}
}

func TestHTTPOptionsPanicOnBadInput(t *testing.T) {
	a := Wrap(server.NewMCPServer("t", "1"))
	for _, opt := range []HTTPOption{
		WithAllowedOrigins("https://app.example.com/"),
		WithAllowedOrigins("app.example.com"),
		WithAllowedOrigins("https://app.example.com/path"),
		WithMaxBodyBytes(0),
		WithAllowedHosts("https://mcp.example.com"),
		WithAllowedHosts(""),
		WithAllowedHosts("mcp.example.com/mcp"),
		WithAllowedHosts(":8080"),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic")
				}
			}()
			a.HTTPHandler(http.NotFoundHandler(), opt)
		}()
	}
}

func TestHTTPHandlerCapsTheBody(t *testing.T) {
	g := newGuardServer(t, WithMaxBodyBytes(1024))
	pad := strings.Repeat(" ", 2048)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			body := legacyInit + pad
			var rd io.Reader = strings.NewReader(body)
			if chunked {
				rd = io.MultiReader(rd) // hides the length: no Content-Length
			}
			req, _ := http.NewRequest(http.MethodPost, g.url, rd)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d (%s), want 413", res.StatusCode, b)
			}
			if e := wireErrorOf(t, b); !strings.Contains(e.Message, "1024 bytes") {
				t.Fatalf("error %+v does not name the limit", e)
			}
			if g.sessions.Load() != 0 {
				t.Fatal("an oversized initialize made a session")
			}
		})
	}
	// Within the limit, the same request is served.
	if status, body := g.do(t, guardRequest{method: http.MethodPost, body: legacyInit + pad[:512]}); status != http.StatusOK {
		t.Fatalf("status %d, %s", status, body)
	}
}

// TestHTTPHandlerDoesNotReadAHugeBody sends 100 MB (generated, never held by
// the client) with and without a Content-Length, and checks that the
// process allocated far less than that: the body is refused at the limit.
func TestHTTPHandlerDoesNotReadAHugeBody(t *testing.T) {
	g := newGuardServer(t)
	const huge = 100 << 20
	for _, chunked := range []bool{false, true} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var rd io.Reader = io.LimitReader(zeros{}, huge)
		req, _ := http.NewRequest(http.MethodPost, g.url, rd)
		if !chunked {
			req.ContentLength = huge
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		status := 0
		if err == nil {
			status = res.StatusCode
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		runtime.ReadMemStats(&after)
		// The server may close the connection before the client has sent
		// everything: either way the body was not read.
		if err == nil && status != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked=%v: status %d, want 413", chunked, status)
		}
		// Reading up to the 4 MiB limit costs about twice that (the buffer
		// grows by doubling), the race detector about twice again: 24 MiB
		// is a quarter of the body.
		grew := after.TotalAlloc - before.TotalAlloc
		if grew > 6*DefaultMaxBodyBytes {
			t.Fatalf("chunked=%v: %d bytes allocated for a refused 100 MB body", chunked, grew)
		}
		t.Logf("chunked=%v: %d bytes allocated for a refused 100 MB body", chunked, grew)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestHTTPHandlerRefusesBatches(t *testing.T) {
	g := newGuardServer(t)
	status, body := g.do(t, guardRequest{method: http.MethodPost, body: " [" + legacyInit + "]"})
	if status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", status)
	}
	if e := wireErrorOf(t, body); e.Code != mcp.INVALID_REQUEST || !strings.Contains(e.Message, "batches are not supported") {
		t.Fatalf("error %+v", e)
	}
	if g.sessions.Load() != 0 {
		t.Fatal("a batch made a session")
	}
}

// TestHTTPHandlerAcceptsNotificationsWithoutMeta: 2026-07-28 gives client
// notifications an optional meta object without the request fields; mcp-go
// alone answers 400 for one without the protocol version.
func TestHTTPHandlerAcceptsNotificationsWithoutMeta(t *testing.T) {
	g := newGuardServer(t)
	plain := httptest.NewServer(server.NewStreamableHTTPServer(g.a.Server()))
	defer plain.Close()
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"context canceled"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"_meta":{"x":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications\u002fcancelled","params":{"requestId":2}}`,
	} {
		r := guardRequest{method: http.MethodPost, version: mcp.ProtocolVersion20260728, body: body}
		var m struct{ Method string }
		_ = json.Unmarshal([]byte(body), &m)
		r.header = map[string]string{mcp.HeaderMethod: m.Method}
		if status, resp := g.do(t, r); status != http.StatusAccepted {
			t.Errorf("%s: status %d (%s), want 202", body, status, resp)
		}
		// The same through plain mcp-go, to show what the edge mends.
		pg := &guardServer{url: plain.URL}
		if status, _ := pg.do(t, r); status != http.StatusBadRequest {
			t.Logf("note: plain mcp-go now answers %d for %s", status, body)
		}
	}
	// A request still needs its _meta.
	r := modernCall("")
	r.body = strings.Replace(r.body, `"io.modelcontextprotocol/protocolVersion":"2026-07-28",`, "", 1)
	if status, _ := g.do(t, r); status != http.StatusBadRequest {
		t.Fatalf("a request without _meta: status %d, want 400", status)
	}
}

// FuzzWithNotificationMeta: whatever the body, withNotificationMeta does
// not panic; it changes only a notification without the protocol version,
// into one that carries it and keeps everything else.
func FuzzWithNotificationMeta(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"x","params":null}`,
		`{"jsonrpc":"2.0","method":"x","params":{"_meta":null}}`,
		`{"jsonrpc":"2.0","method":"x","params":{"_meta":{"a":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","method":"x","params":[1]}`,
		`[1,2]`, `nul`, `{"method":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out := withNotificationMeta(body, mcp.ProtocolVersion20260728)
		if string(out) == string(body) {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(body, &before) != nil {
			t.Fatalf("changed a body that is not a JSON object: %q", body)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("wrote invalid JSON %q: %v", out, err)
		}
		if _, ok := before["id"]; ok {
			t.Fatalf("changed a request: %q", body)
		}
		var m struct {
			Params struct {
				Meta *mcp.Meta `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(out, &m) != nil || m.Params.Meta.ProtocolVersion() != mcp.ProtocolVersion20260728 {
			t.Fatalf("no protocol version in %q", out)
		}
		for k, v := range before {
			if k != "params" && string(after[k]) != string(v) {
				// Re-encoding may respell a value; it must mean the same.
				var x, y any
				_ = json.Unmarshal(v, &x)
				_ = json.Unmarshal(after[k], &y)
				bx, _ := json.Marshal(x)
				by, _ := json.Marshal(y)
				if string(bx) != string(by) {
					t.Fatalf("key %q changed from %s to %s", k, v, after[k])
				}
			}
		}
	})
}

// FuzzOriginAllowed: no Origin header makes originAllowed panic, and only
// the kinds of origin it documents pass.
func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"http://evil.example", "null", "http://localhost:1", "http://[::1]:80", "https://h", "http://%zz", "http://127.0.0.1.evil", "http://[fe80::1%25eth0]:80", ""} {
		f.Add(s, "h:443")
	}
	cfg := newHTTPConfig([]HTTPOption{WithAllowedOrigins("https://app.example.com")})
	f.Fuzz(func(t *testing.T, origin, host string) {
		r := &http.Request{Header: http.Header{}, Host: host}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if _, ok := cfg.originAllowed(r); ok && origin != "" && origin != "https://app.example.com" && !isOrigin(origin) {
			t.Fatalf("origin %q allowed for host %q, though it is not an origin", origin, host)
		}
	})
}

// listenRequestID finds a listen request however its method is spelled
// in JSON, so that Close can cut its stream short like any other.
func TestListenRequestID(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{}}`, `7`},
		{`{"jsonrpc":"2.0","id":"a","method":"subscriptions\/listen","params":{}}`, `"a"`},
		{`{"jsonrpc":"2.0","id":8,"method":"\u0073ubscriptions/listen"}`, `8`},
		{`{"jsonrpc":"2.0","ID":9,"method":"subscriptions/listen"}`, `9`},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a\/b"}}`, ``},
		{`{"jsonrpc":"2.0","method":"subscriptions/listen"}`, ``},
		{`{"jsonrpc":"2.0","id":null,"method":"subscriptions/listen"}`, ``},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"subscriptions/listen"}}`, ``},
	} {
		if got := string(listenRequestID([]byte(tc.body))); got != tc.want {
			t.Errorf("listenRequestID(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// bigAnswer is the result of a command whose answer is larger than the
// connection's buffers.
type bigAnswer struct {
	Text string `json:"text"`
}

// TestJSONAnswerToAClientThatNeverReads: a JSON answer, unlike an event
// stream, was written with no write bound. A client that asks for an answer
// larger than the connection's buffers and never reads it held the
// request's goroutine and the whole answer for as long as the TCP
// connection lasted: a few such clients, and memory goes. The write must
// fail once the client has not read for the write timeout, and the
// request's handler return: for an answer the edge holds whole (under
// maxRewrite, in case its error is rewritten) and for one it passes
// through as mcp-go writes it.
func TestJSONAnswerToAClientThatNeverReads(t *testing.T) {
	for _, tc := range []struct {
		name string
		text int // the answer's text; the body holds it about twice
	}{
		{"held whole", 24 << 10},
		{"passed through", 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer leakcheck.VerifyNone(t, leakcheck.Current())
			a := Wrap(server.NewMCPServer("t", "1"))
			text := strings.Repeat("x", tc.text)
			Command(a, "big_show", "A big answer.", func(context.Context, struct{}) (bigAnswer, error) {
				return bigAnswer{Text: text}, nil
			})
			a.live.streamWriteTimeout = 100 * time.Millisecond
			hs, returned := hostileServer(t, a)
			defer hs.Close()
			defer hs.CloseClientConnections() // a blocked write fails, should the test fail

			params := `{"name":"big_show","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`
			header := http.Header{
				"Content-Type":            {"application/json"},
				"Accept":                  {"application/json, text/event-stream"},
				mcp.HeaderProtocolVersion: {mcp.ProtocolVersion20260728},
			}
			for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MethodToolsCall, json.RawMessage(params)) {
				header.Set(k, v)
			}
			conn := neverReads(t, hs, http.MethodPost, header, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`))

			select {
			case <-returned:
			case <-time.After(10 * time.Second):
				t.Fatal("the JSON answer to a client that never reads is still being written 10 s on, past the write timeout")
			}
			// The answer was the command's, cut short, not an error.
			head := make([]byte, 64)
			n, _ := conn.Read(head)
			if !strings.HasPrefix(string(head[:n]), "HTTP/1.1 200 ") {
				t.Fatalf("the answer began %q, want 200", head[:n])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPassedThroughWritesAreBounded: after a JSON answer outgrew what the
// edge holds, or for a body of another type, mcp-go's further writes and
// flushes go through as they come; into a connection whose client reads
// nothing, each fails after the write timeout instead of blocking for as
// long as the connection lasts.
func TestPassedThroughWritesAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(w http.ResponseWriter) error
	}{
		{"write", func(w http.ResponseWriter) error {
			_, err := w.Write([]byte("more"))
			return err
		}},
		{"flush", func(w http.ResponseWriter) error {
			w.(http.Flusher).Flush()
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStallingWriter()
			e := &httpEdge{w: w, timeout: 20 * time.Millisecond}
			var ew http.ResponseWriter = &flushingHTTPEdge{e, stallingFlusher{w}}
			ew.Header().Set("Content-Type", "text/plain")
			ew.WriteHeader(http.StatusOK)
			done := make(chan error, 1)
			go func() { done <- tc.write(ew) }()
			select {
			case err := <-done:
				if tc.name == "write" && err == nil {
					t.Error("a write into a connection nobody reads succeeded")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a passed-through write into a stalled connection is still waiting, past the write timeout")
			}
		})
	}
}

// stallingFlusher flushes into a connection whose client reads nothing: a
// flush blocks as the stalling writer's writes do.
type stallingFlusher struct{ *stallingWriter }

func (f stallingFlusher) Flush() { _, _ = f.Write(nil) }

// TestHTTPHandlerRefusesRepeatedKeysWhateverTheIDIsSpelled: encoding/json,
// and with it mcp-go, matches the key "ID" (or "Id") to the id of a
// request. The edge took such a 2026-07-28 request for a notification and
// re-encoded it: it added the protocol _meta that a request must bring
// itself, and kept one value of a key given twice, so that mcp-go ran the
// call with the second "arguments" where the request hook would refuse it.
func TestHTTPHandlerRefusesRepeatedKeysWhateverTheIDIsSpelled(t *testing.T) {
	for _, idKey := range []string{`"id"`, `"ID"`, `"Id"`} {
		g := newGuardServer(t)
		r := modernCall("")
		r.body = strings.Replace(r.body, `"id":7`, idKey+`:7`, 1)
		// The same key twice in params; an escape anywhere in the body.
		r.body = strings.Replace(r.body, `"arguments":{"id":1}`, `"arguments":{"id":1},"arguments":{"id":2}`, 1)
		r.body = strings.Replace(r.body, `clientInfo":{"name":"t"`, `clientInfo":{"name":"\u0074"`, 1)
		// Without the protocol version in _meta, which the edge adds to
		// notifications only.
		r.body = strings.Replace(r.body, `"io.modelcontextprotocol/protocolVersion":"2026-07-28",`, "", 1)
		status, body := g.do(t, r)
		if g.writes.Load() != 0 {
			t.Errorf("%s: the call ran (status %d, %s)", idKey, status, body)
			continue
		}
		if status != http.StatusBadRequest {
			t.Errorf("%s: status %d, body %s; want 400", idKey, status, body)
		}
	}
}

// TestHTTPHandlerRefusesKeysThatDifferInCaseOnly: mcp-go decodes a
// request and its params into structs, and encoding/json matches a
// struct's field by its key whatever the case, keeping the last: a
// tools/call with "name":"nope","Name":"items_touch" runs items_touch,
// where a proxy, reading keys by case as JSON parsers elsewhere do, saw
// "nope". Inside the objects mcp-go decodes as maps (_meta, a call's
// arguments), keys that differ in case are different keys.
func TestHTTPHandlerRefusesKeysThatDifferInCaseOnly(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		{`"name":"items_touch"`, `"name":"nope","Name":"items_touch"`},
		{`"arguments":{"id":1}`, `"arguments":{"id":1},"ARGUMENTS":{"id":2}`},
		{`"jsonrpc":"2.0"`, `"jsonrpc":"2.0","Method":"tools/list"`},
	} {
		g := newGuardServer(t)
		r := modernCall("")
		r.body = strings.Replace(r.body, c.from, c.to, 1)
		status, body := g.do(t, r)
		if g.writes.Load() != 0 || status != http.StatusBadRequest || !strings.Contains(string(body), `"code":-32602`) {
			t.Errorf("%s: status %d, %d runs, %s; want 400 with -32602 and no run", c.to, status, g.writes.Load(), body)
		}
	}
	g := newGuardServer(t)
	r := modernCall("")
	r.body = strings.Replace(r.body, `"_meta":{`, `"_meta":{"x.example/k":1,"x.example/K":2,`, 1)
	if status, body := g.do(t, r); status != http.StatusOK || g.writes.Load() != 1 {
		t.Fatalf("keys of _meta that differ in case: status %d, %s; want the call run", status, body)
	}
}
