package adapter

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// HandleMessage handles one JSON-RPC message the way the server's own
// MCPServer.HandleMessage does, and returns the response with the exact error
// the adapter means for it: -32602 with data.errors for arguments that do not
// convert or validate, resource-not-found with data.uri for the era, and so on
// (see docs/reading.md). A nil response means the message was a notification.
//
// It is the seam for transports of your own and for tests: ctx should carry
// what a transport puts there, above all the client session
// (srv.WithContext(ctx, session)), as mcp-go's transports do.
// HTTPHandler, ServeStdio and package adaptertest all answer with exactly
// the errors HandleMessage returns.
func (a *Adapter) HandleMessage(ctx context.Context, raw json.RawMessage) mcp.JSONRPCMessage {
	ctx, box := withErrorBox(ctx)
	resp := a.srv.HandleMessage(ctx, raw)
	switch r := resp.(type) {
	case mcp.JSONRPCError:
		if e := box.take(r.ID); e != nil {
			r.Error = mcp.NewJSONRPCErrorDetails(e.Code, e.Message, e.Data)
			return r
		}
	case *mcp.JSONRPCError:
		if r != nil {
			if e := box.take(r.ID); e != nil {
				out := *r
				out.Error = mcp.NewJSONRPCErrorDetails(e.Code, e.Message, e.Data)
				return &out
			}
		}
	}
	return resp
}
