package adapter

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestMCPGoInternals fails when an mcp-go upgrade moves what mcpgo.go reads:
// each read must succeed and see what the public API set.
func TestMCPGoInternals(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	if serving, ok := hasSessions(srv); !ok || serving {
		t.Fatalf("hasSessions of a new server: serving %v, ok %v: mcp-go moved its session map; update mcpgo.go", serving, ok)
	}
	s := &fakeSession{id: "s", ch: make(chan mcp.JSONRPCNotification, 1)}
	if err := srv.RegisterSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if serving, ok := hasSessions(srv); !ok || !serving {
		t.Fatalf("hasSessions with a session: serving %v, ok %v: mcp-go moved its session map; update mcpgo.go", serving, ok)
	}

	for _, want := range []bool{true, false} {
		srv := server.NewMCPServer("t", "1", server.WithResourceCapabilities(false, want))
		if got, ok := resourcesListChanged(srv); !ok || got != want {
			t.Fatalf("resourcesListChanged: %v, ok %v, want %v: mcp-go moved the resources capability; update mcpgo.go", got, ok, want)
		}
	}
	if got, ok := resourcesListChanged(server.NewMCPServer("t", "1")); !ok || got {
		t.Fatalf("resourcesListChanged without the capability: %v, ok %v", got, ok)
	}

	srv = server.NewMCPServer("t", "1")
	if wrapped, ok := wrappedAlready(srv); !ok || wrapped {
		t.Fatalf("wrappedAlready of a new server: %v, ok %v: mcp-go moved its completion provider; update mcpgo.go", wrapped, ok)
	}
	Wrap(srv)
	if wrapped, ok := wrappedAlready(srv); !ok || !wrapped {
		t.Fatalf("wrappedAlready of a wrapped server: %v, ok %v: mcp-go moved its completion provider; update mcpgo.go", wrapped, ok)
	}
}

// failingCompletions is a completion provider that always fails, with an
// error mcp-go would send as it is from a read's handler.
type failingCompletions struct{}

func (failingCompletions) CompleteResourceArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return nil, (&rpcError{Code: mcp.INVALID_PARAMS, Message: "refused", Data: map[string]string{"why": "test"}}).wire()
}

// mcpGoError sends one request to srv as a legacy in-process client and
// returns its error, nil for a success.
func mcpGoError(t *testing.T, srv *server.MCPServer, msg string) *mcp.JSONRPCErrorDetails {
	t.Helper()
	s := &fakeSession{id: "upstream", ch: make(chan mcp.JSONRPCNotification, 1)}
	ctx := srv.WithContext(context.Background(), s)
	switch r := srv.HandleMessage(ctx, []byte(msg)).(type) {
	case mcp.JSONRPCError:
		return &r.Error
	case *mcp.JSONRPCError:
		return &r.Error
	}
	return nil
}

// TestMCPGoStillNeedsTheEdges fails when an mcp-go upgrade fixes what one
// of the adapter's workarounds answers (docs/transports.md, "mcp-go
// compatibility"): each case is the upstream behaviour, as mcp-go's own
// source has it, that a workaround exists for. When one fails, delete the
// workaround it names and its row of the table.
func TestMCPGoStillNeedsTheEdges(t *testing.T) {
	const legacy = `"params":{"_meta":{}}`
	for _, tc := range []struct {
		upstream, workaround string
		still                func(t *testing.T) bool
	}{
		{
			"server.go handleComplete: a completion provider's error is -32603, its code and data lost, server.NewHandlerError or not",
			"the errorBox (completion errors, rewrite.go)",
			func(t *testing.T) bool {
				srv := server.NewMCPServer("t", "1", server.WithCompletions(), server.WithResourceCompletionProvider(failingCompletions{}))
				e := mcpGoError(t, srv, `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"app://x/{id}"},"argument":{"name":"id","value":""}}}`)
				return e != nil && e.Code == mcp.INTERNAL_ERROR && e.Data == nil
			},
		},
		{
			"request_handler.go: a request-initialization hook's error is -32600 with its message, no data, server.NewHandlerError or not",
			"the errorBox (subscribe and listen refusals, repeated keys; rewrite.go)",
			func(t *testing.T) bool {
				hooks := &server.Hooks{}
				hooks.AddOnRequestInitialization(func(context.Context, any, any) error {
					return (&rpcError{Code: mcp.INVALID_PARAMS, Message: "refused", Data: map[string]string{"why": "test"}}).wire()
				})
				srv := server.NewMCPServer("t", "1", server.WithHooks(hooks))
				e := mcpGoError(t, srv, `{"jsonrpc":"2.0","id":1,"method":"tools/list",`+legacy+`}`)
				return e != nil && e.Code == mcp.INVALID_REQUEST && e.Data == nil
			},
		},
		{
			"server.go handleReadResource: its own resource-not-found has no data.uri",
			"wireError (errors.go): an ungranted command must read like a missing one",
			func(t *testing.T) bool {
				srv := server.NewMCPServer("t", "1", server.WithResourceCapabilities(false, false))
				e := mcpGoError(t, srv, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://nope/1"}}`)
				return e != nil && e.Code == mcp.RESOURCE_NOT_FOUND && e.Data == nil
			},
		},
		{
			"request_handler.go: a JSON-RPC batch is a parse error",
			"isBatch (http.go, stdio.go): answered -32600 naming what is wrong",
			func(t *testing.T) bool {
				srv := server.NewMCPServer("t", "1")
				e := mcpGoError(t, srv, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`)
				return e != nil && e.Code == mcp.PARSE_ERROR
			},
		},
		{
			"server.go handleSubscribe: legacy resources/subscribe accepts any URI and tracks nothing",
			"subscribeHook (subscribe.go): strict URIs, the registry tracks subscriptions",
			func(t *testing.T) bool {
				srv := server.NewMCPServer("t", "1", server.WithResourceCapabilities(true, false))
				return mcpGoError(t, srv, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"no scheme at all"}}`) == nil
			},
		},
		{
			"session.go SendNotificationToSpecificClient: a full session channel drops the notification",
			"the outbox and its delivery goroutine (conn.go)",
			func(t *testing.T) bool {
				srv := server.NewMCPServer("t", "1")
				s := &fakeSession{id: "full", ch: make(chan mcp.JSONRPCNotification)}
				if err := srv.RegisterSession(context.Background(), s); err != nil {
					t.Fatal(err)
				}
				err := srv.SendNotificationToSpecificClient("full", "notifications/resources/updated", map[string]any{"uri": "app://x"})
				return errors.Is(err, server.ErrNotificationChannelBlocked)
			},
		},
		{
			"inflight_request.go: requests without a session ID (stateless HTTP's) share one key space: any client's notifications/cancelled cancels another's request",
			"statelessRequests (cancel.go): HTTPHandler answers stateless cancellations itself, per identity",
			func(t *testing.T) bool {
				srv := server.NewMCPServer("t", "1")
				started, cancelled := make(chan struct{}), make(chan struct{})
				srv.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					close(started) // registered for cancellation before it runs
					select {
					case <-ctx.Done():
						close(cancelled)
					case <-time.After(10 * time.Second):
					}
					return nil, ctx.Err()
				})
				ada := srv.WithContext(context.Background(), &fakeSession{id: "", ch: make(chan mcp.JSONRPCNotification, 1)})
				kurt := srv.WithContext(context.Background(), &fakeSession{id: "", ch: make(chan mcp.JSONRPCNotification, 1)})
				answered := make(chan struct{})
				go func() {
					defer close(answered)
					srv.HandleMessage(ada, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`))
				}()
				defer func() { <-answered }()
				<-started
				srv.HandleMessage(kurt, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
				select {
				case <-cancelled:
					return true
				case <-answered:
					return false
				}
			},
		},
		{
			"subscriptions.go handleSubscriptionsListen: a listen its client cancelled is answered with its result",
			"stdioListens and httpEdge.cancelListen (cancel.go, stdio.go, http.go): the answer is left out",
			func(t *testing.T) bool {
				srv := server.NewMCPServer("t", "1", server.WithToolCapabilities(true))
				s := &fakeSession{id: "upstream", ch: make(chan mcp.JSONRPCNotification, 4)}
				if err := srv.RegisterSession(context.Background(), s); err != nil {
					t.Fatal(err)
				}
				ctx := srv.WithContext(context.Background(), s)
				answer := make(chan mcp.JSONRPCMessage, 1)
				go func() {
					answer <- srv.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`+
						`"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
						`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
				}()
				<-s.ch // the acknowledgement: the listen is in flight
				srv.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
				_, isResult := (<-answer).(mcp.JSONRPCResponse)
				return isResult
			},
		},
		{
			"streamable_http.go: no Origin check; a foreign Origin is served",
			"HTTPHandler's Origin check (http.go)",
			func(t *testing.T) bool {
				return plainHTTPStatus(t, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }) == http.StatusOK
			},
		},
	} {
		t.Run(tc.workaround, func(t *testing.T) {
			if !tc.still(t) {
				t.Errorf("mcp-go no longer behaves as the adapter works around: %s.\nDelete the workaround (%s) and its row in docs/transports.md.", tc.upstream, tc.workaround)
			}
		})
	}
}

// plainHTTPStatus POSTs a legacy initialize, edited by edit, to mcp-go's
// own Streamable HTTP server over loopback, and returns the status.
func plainHTTPStatus(t *testing.T, edit func(*http.Request)) int {
	t.Helper()
	ts := httptest.NewServer(server.NewStreamableHTTPServer(server.NewMCPServer("t", "1")))
	defer ts.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	edit(req)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
