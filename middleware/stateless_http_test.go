package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestRemoteAddrOnStatelessHTTP checks, against mcp-go itself, what a tool
// handler sees on modern (stateless) Streamable HTTP: a session without an
// ID, and the client's address only when RemoteAddrHandler or
// RemoteAddrContext put it there.
func TestRemoteAddrOnStatelessHTTP(t *testing.T) {
	plain := func(s *server.MCPServer) http.Handler { return server.NewStreamableHTTPServer(s) }
	wrapped := func(s *server.MCPServer) http.Handler { return RemoteAddrHandler(server.NewStreamableHTTPServer(s)) }
	contextFunc := func(s *server.MCPServer) http.Handler {
		return server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(RemoteAddrContext))
	}
	tests := []struct {
		name     string
		handler  func(*server.MCPServer) http.Handler
		legacy   bool // speak protocol 2025-11-25, which has session IDs
		wantAddr bool
	}{
		{name: "plain", handler: plain},
		{name: "RemoteAddrHandler", handler: wrapped, wantAddr: true},
		{name: "RemoteAddrContext", handler: contextFunc, wantAddr: true},
		{name: "legacy sessions have an ID", handler: wrapped, legacy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := server.NewMCPServer("test", "1.0.0")
			s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				session := server.ClientSessionFromContext(ctx)
				if session == nil {
					return mcp.NewToolResultText("no session"), nil
				}
				return mcp.NewToolResultText(DefaultKey(ctx, &Call{Session: session})), nil
			})
			ts := httptest.NewServer(tt.handler(s))
			defer ts.Close()

			tr, err := transport.NewStreamableHTTP(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			var opts []client.ClientOption
			if tt.legacy {
				opts = append(opts, client.WithLegacyProtocolOnly())
			}
			c := client.NewClient(tr, opts...)
			defer c.Close()
			ctx := t.Context()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "whoami"}})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Content[0].(mcp.TextContent).Text
			switch {
			case tt.legacy:
				if !strings.HasPrefix(got, "session:") || len(got) == len("session:") {
					t.Errorf("key in the tool handler = %q, want session:<id>", got)
				}
			case tt.wantAddr:
				if got != "addr:127.0.0.1" {
					t.Errorf("key in the tool handler = %q, want addr:127.0.0.1", got)
				}
			default:
				if got != "" {
					t.Errorf("key in the tool handler = %q, want \"\": no ID, no address", got)
				}
			}
		})
	}
}
