package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestPeekMessage(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"result":{"text":"` + strings.Repeat("x", 3*maxRewrite) + `"}}`
	for _, tc := range []struct {
		msg  string
		kind messageKind
		id   string
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, kindError, `1`},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, kindResult, `"a"`},
		{`{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"id":"late"}`, kindError, `"late"`},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, kindOther, ``},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"}`, kindOther, `3`},
		{`[{"jsonrpc":"2.0","id":1,"error":{}}]`, kindOther, ``},
		{`not json`, kindOther, ``},
		{``, kindOther, ``},
		{big, kindResult, `7`},
		// A prefix: the id is known before the message ends.
		{big[:40], kindResult, `7`},
		{`{"jsonrpc":"2.0","id":12`, kindOther, ``},
	} {
		kind, id := peekMessage([]byte(tc.msg))
		if kind != tc.kind || string(id) != tc.id {
			t.Errorf("peekMessage(%.60q) = %v, %s; want %v, %s", tc.msg, kind, id, tc.kind, tc.id)
		}
	}
}

// edgeTestError is the -32603 mcp-go writes for id.
func edgeTestError(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"invalid arguments: page: bad"}}`
}

// edgeTestBox is a box with the exact errors of ids 1 and "two".
func edgeTestBox() *errorBox {
	_, box := withErrorBox(context.Background())
	box.put(float64(1), &rpcError{Code: mcp.INVALID_PARAMS, Message: "invalid arguments: page: bad",
		Data: &ValidationError{Errors: []FieldError{{Field: "page", Message: "bad"}}}})
	box.put("two", &rpcError{Code: mcp.RESOURCE_NOT_FOUND, Message: "resource not found: app://x/1",
		Data: map[string]string{"uri": "app://x/1"}})
	return box
}

const (
	edgeWant1   = `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid arguments: page: bad","data":{"errors":[{"field":"page","message":"bad"}]}}}`
	edgeWantTwo = `{"jsonrpc":"2.0","id":"two","error":{"code":-32002,"message":"resource not found: app://x/1","data":{"uri":"app://x/1"}}}`
)

func TestRewriteMessage(t *testing.T) {
	box := edgeTestBox()
	if _, ok := rewriteMessage(box, []byte(edgeTestError(`2`))); ok {
		t.Error("rewrote an id without an entry")
	}
	rw, ok := rewriteMessage(box, []byte(edgeTestError(`1`)))
	if !ok || string(rw.msg) != edgeWant1 || rw.from != mcp.INTERNAL_ERROR || rw.to != mcp.INVALID_PARAMS {
		t.Errorf("rewriteMessage = %s (%d -> %d), %v; want %s", rw.msg, rw.from, rw.to, ok, edgeWant1)
	}
	if _, ok := rewriteMessage(box, []byte(edgeTestError(`1`))); ok {
		t.Error("an entry was used twice")
	}
	// A result for an id takes its entry too: nothing stays behind.
	if _, ok := rewriteMessage(box, []byte(`{"jsonrpc":"2.0","id":"two","result":{}}`)); ok {
		t.Error("rewrote a result")
	}
	if len(box.m) != 0 {
		t.Errorf("box holds %d entries after every id was answered", len(box.m))
	}

	// A message longer than maxRewrite passes unmodified, and its entry goes.
	box = edgeTestBox()
	long := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"` + strings.Repeat("y", maxRewrite) + `"}}`
	if _, ok := rewriteMessage(box, []byte(long)); ok {
		t.Error("rewrote a message longer than maxRewrite")
	}
	if box.take(float64(1)) != nil {
		t.Error("the entry of a message too long to rewrite stayed in the box")
	}
}

// chunks splits s into pieces of n bytes.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func TestLineRewriterWhateverTheWrites(t *testing.T) {
	note := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"app://x/1"}}`
	bigResult := `{"jsonrpc":"2.0","id":5,"result":{"text":"` + strings.Repeat("z", maxRewrite+100) + `"}}`
	in := note + "\n" + edgeTestError(`1`) + "\n" + bigResult + "\n" + edgeTestError(`"two"`) + "\r\n" + edgeTestError(`3`) + "\n" + "partial"
	want := note + "\n" + edgeWant1 + "\n" + bigResult + "\n" + edgeWantTwo + "\n" + edgeTestError(`3`) + "\n" + "partial"
	for _, n := range []int{1, 2, 7, 64, 1000, maxRewrite - 1, maxRewrite + 1, len(in)} {
		var out bytes.Buffer
		box := edgeTestBox()
		w := &lineRewriter{out: &out, box: box}
		for _, c := range chunks(in, n) {
			if k, err := w.Write([]byte(c)); k != len(c) || err != nil {
				t.Fatalf("Write = %d, %v; want %d", k, err, len(c))
			}
		}
		w.close()
		if got := out.String(); got != want {
			t.Errorf("chunks of %d: got\n%.300s\nwant\n%.300s", n, got, want)
		}
		if len(box.m) != 0 {
			t.Errorf("chunks of %d: %d entries left in the box", n, len(box.m))
		}
	}
}

func TestLineRewriterPassesLongErrorsAndForgetsThem(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"` + strings.Repeat("y", 2*maxRewrite) + `"}}` + "\n"
	for _, n := range []int{100, len(long)} {
		var out bytes.Buffer
		box := edgeTestBox()
		w := &lineRewriter{out: &out, box: box}
		for _, c := range chunks(long, n) {
			w.Write([]byte(c))
		}
		if out.String() != long {
			t.Errorf("chunks of %d: the long line was changed", n)
		}
		if box.take(float64(1)) != nil {
			t.Errorf("chunks of %d: the entry of the long line stayed in the box", n)
		}
	}
}

func TestEventRewriterWhateverTheWrites(t *testing.T) {
	note := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
	errEvent := "id: 9\nevent: message\ndata: " + edgeTestError(`1`) + "\n\n"
	crlf := "event: message\r\ndata:" + edgeTestError(`"two"`) + "\r\n\r\n"
	big := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"" + strings.Repeat("z", maxRewrite) + "\"}\n\n"
	multi := "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":3,\"error\":{\"code\":1,\"message\":\"m\"}}\n\n"
	ping := ": ping\n\n"
	in := note + errEvent + big + crlf + ping + multi
	want := note + "id: 9\nevent: message\ndata: " + edgeWant1 + "\n\n" + big +
		"event: message\r\ndata: " + edgeWantTwo + "\n\r\n" + ping + multi
	for _, n := range []int{1, 3, 50, maxRewrite + 7, len(in)} {
		var out bytes.Buffer
		box := edgeTestBox()
		r := &eventRewriter{out: &out, box: box}
		for _, c := range chunks(in, n) {
			if k, err := r.Write([]byte(c)); k != len(c) || err != nil {
				t.Fatalf("Write = %d, %v", k, err)
			}
		}
		r.close()
		if got := out.String(); got != want {
			t.Errorf("chunks of %d: got\n%.400q\nwant\n%.400q", n, got, want)
		}
	}
}

// edgeTestAdapter is an adapter whose server the tests do not use: the
// handlers below stand in for mcp-go and fill the box themselves.
func edgeTestAdapter() *Adapter {
	return Wrap(server.NewMCPServer("edge", "1"))
}

// The event stream is rewritten event by event: what comes before the error
// reaches the client while the handler is still running.
func TestHTTPHandlerStreamsEvents(t *testing.T) {
	a := edgeTestAdapter()
	release := make(chan struct{})
	h := a.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		w.(http.Flusher).Flush()
		<-release
		errorBoxFrom(r.Context()).put(float64(1), &rpcError{Code: mcp.INVALID_PARAMS, Message: "m", Data: map[string]int{"n": 1}})
		// Half an event, flushed: it is held until it ends.
		io.WriteString(w, "event: message\ndata: ")
		w.(http.Flusher).Flush()
		io.WriteString(w, edgeTestError(`1`)+"\n\n")
		w.(http.Flusher).Flush()
	}))
	ts := httptest.NewServer(h)
	defer ts.Close()
	res, err := http.Post(ts.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "event: message\n" {
		t.Fatalf("first line %q, %v", first, err)
	}
	close(release) // the notification arrived before the handler went on
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	want := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"m\",\"data\":{\"n\":1}}}\n\n"
	if string(rest) != want {
		t.Errorf("stream rest = %q, want %q", rest, want)
	}
}

func TestHTTPHandlerRewritesJSONBodies(t *testing.T) {
	a := edgeTestAdapter()
	body := edgeTestError(`1`) + "\n"
	for _, tc := range []struct {
		name       string
		version    string
		status     int
		entry      bool
		wantStatus int
		wantBody   string
	}{
		{"modern maps the status", mcp.ProtocolVersion20260728, http.StatusOK, true, http.StatusBadRequest, edgeWant1 + "\n"},
		{"legacy keeps 200", mcp.ProtocolVersion20251125, http.StatusOK, true, http.StatusOK, edgeWant1 + "\n"},
		{"a status mcp-go did not map is kept", mcp.ProtocolVersion20260728, http.StatusTeapot, true, http.StatusTeapot, edgeWant1 + "\n"},
		{"no entry, no change", mcp.ProtocolVersion20260728, http.StatusOK, false, http.StatusOK, body},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := a.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.entry {
					errorBoxFrom(r.Context()).put(float64(1), edgeTestBox().take(float64(1)))
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				w.WriteHeader(tc.status)
				io.WriteString(w, body)
			}))
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
			req.Header.Set(mcp.HeaderProtocolVersion, tc.version)
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus || rec.Body.String() != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body, tc.wantStatus, tc.wantBody)
			}
			if cl := rec.Header().Get("Content-Length"); tc.entry && cl != "" {
				t.Errorf("Content-Length %s kept for a rewritten body", cl)
			}
		})
	}
}

func TestHTTPHandlerPassesOtherResponses(t *testing.T) {
	a := edgeTestAdapter()
	large := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("r", 2*maxRewrite) + `"}`
	for _, tc := range []struct {
		name, method, ctype string
		status              int
		body                string
	}{
		{"plain text", http.MethodPost, "text/plain", http.StatusBadRequest, "Invalid session ID\n"},
		{"accepted", http.MethodPost, "", http.StatusAccepted, ""},
		{"large JSON", http.MethodPost, "application/json", http.StatusOK, large},
		{"GET stream", http.MethodGet, "text/event-stream", http.StatusOK, "event: message\ndata: " + edgeTestError(`1`) + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := a.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				errorBoxFrom(r.Context()).put(float64(1), edgeTestBox().take(float64(1)))
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(tc.status)
				for _, c := range chunks(tc.body, 1000) {
					io.WriteString(w, c)
				}
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, "/mcp", strings.NewReader(`{}`)))
			if rec.Code != tc.status || rec.Body.String() != tc.body {
				t.Errorf("got %d %.80q, want %d %.80q", rec.Code, rec.Body, tc.status, tc.body)
			}
		})
	}
}

// nonFlusher is a ResponseWriter that cannot flush.
type nonFlusher struct{ http.ResponseWriter }

func TestHTTPHandlerOffersWhatTheWriterCan(t *testing.T) {
	a := edgeTestAdapter()
	var flushes, hijacked bool
	h := a.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, flushes = w.(http.Flusher)
		if r.URL.Path == "/hijack" {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("Hijack through the edge: %v", err)
				return
			}
			hijacked = true
			buf.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
			buf.Flush()
			conn.Close()
		}
	}))
	h.ServeHTTP(nonFlusher{httptest.NewRecorder()}, httptest.NewRequest(http.MethodPost, "/", nil))
	if flushes {
		t.Error("the edge offers Flush over a writer that cannot flush; mcp-go would stream into a buffer")
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	if !flushes {
		t.Error("the edge hides Flush of a writer that can flush; mcp-go would not stream")
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	res, err := http.Post(ts.URL+"/hijack", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if !hijacked || res.StatusCode != http.StatusNoContent {
		t.Errorf("hijacked %v, status %d", hijacked, res.StatusCode)
	}
}

// HandleMessage answers exactly the error the edges put on the wire.
func TestHandleMessageSwapsInTheExactError(t *testing.T) {
	srv := server.NewMCPServer("edge", "1")
	a := Wrap(srv)
	type args struct {
		ID int64 `json:"id"`
	}
	Live(a, "things_show", "A thing.", func(context.Context, args) (string, error) {
		return "", fmt.Errorf("thing: %w", ErrNotFound)
	})
	for _, tc := range []struct{ uri, want string }{
		{"app://things_show/x", `{"code":-32602,"message":"invalid arguments: id: `},
		{"app://things_show/1", `{"code":-32002,"message":"resource not found: app://things_show/1","data":{"uri":"app://things_show/1"}}`},
	} {
		msg := `{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"` + tc.uri + `"}}`
		resp := a.HandleMessage(context.Background(), json.RawMessage(msg))
		b, _ := json.Marshal(resp)
		if !strings.Contains(string(b), `"error":`+tc.want) {
			t.Errorf("read %s = %s, want error %s…", tc.uri, b, tc.want)
		}
	}
	if resp := a.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); resp != nil {
		t.Errorf("a notification answered %v", resp)
	}
}

// An error response passes through unmodified when it is too long to
// rewrite, and its entry must go with it whatever the length of its id: on
// stdio the box lives as long as the connection, so an entry left behind per
// request is memory a client can make grow without bound.
func TestLineRewriterKeepsNoEntryWhateverTheID(t *testing.T) {
	for _, n := range []int{10, maxRewrite / 4, maxRewrite - 100, maxRewrite - 23, maxRewrite, 2 * maxRewrite} {
		id := strings.Repeat("i", n)
		raw, _ := json.Marshal(id)
		for _, msgLen := range []int{10, maxRewrite} {
			_, box := withErrorBox(context.Background())
			box.put(id, &rpcError{Code: mcp.INVALID_PARAMS, Message: "bad"})
			line := `{"jsonrpc":"2.0","id":` + string(raw) + `,"error":{"code":-32603,"message":"` + strings.Repeat("m", msgLen) + `"}}` + "\n"
			var out bytes.Buffer
			w := &lineRewriter{out: &out, box: box}
			for _, c := range chunks(line, 4096) {
				w.Write([]byte(c))
			}
			w.close()
			if len(box.m) != 0 {
				t.Errorf("id of %d bytes, message of %d: the box kept the entry after the response", n, msgLen)
			}
			if rewritable := len(line) <= maxRewrite && n <= maxRewrite/4; rewritable && !strings.Contains(out.String(), `"code":-32602`) {
				t.Errorf("id of %d bytes, message of %d: not rewritten", n, msgLen)
			}
		}
	}
}
