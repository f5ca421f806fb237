package adapter

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
)

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
