package adapter

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// rpcError is a JSON-RPC error as the adapter means it to reach the client.
// mcp-go sends every handler error as -32603 with the error's text as
// message, so Error returns only Message, never internals; the transport
// edges (HTTPHandler, ServeStdio, adaptertest) send Code and Data too.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// notFound is resource-not-found for the request's protocol era: -32002
// before 2026-07-28 and -32602 from it on, with the URI in data either way.
// detail, when set, says what was wrong with the URI.
func notFound(ctx context.Context, uri, detail string) *rpcError {
	code := mcp.RESOURCE_NOT_FOUND
	if server.IsModernRequest(ctx) {
		code = mcp.INVALID_PARAMS
	}
	msg := "resource not found: " + truncate(uri, 256)
	if detail != "" {
		msg += ": " + detail
	}
	return &rpcError{Code: code, Message: msg, Data: map[string]string{"uri": uri}}
}

// readError turns what an invocation returned into the error a
// resources/read answers. Errors it does not know are internal: they are
// logged, and the client learns only that the command failed.
func (a *Adapter) readError(ctx context.Context, c *command, uri string, err error) *rpcError {
	var (
		rpc  *rpcError
		uerr *uriError
		verr *ValidationError
		rl   *middleware.RateLimitError
	)
	switch {
	case errors.As(err, &rpc):
		return rpc
	case errors.As(err, &uerr):
		return notFound(ctx, uri, uerr.reason)
	case errors.As(err, &verr):
		return &rpcError{Code: mcp.INVALID_PARAMS, Message: verr.Error(), Data: verr}
	case errors.Is(err, ErrNotFound):
		return notFound(ctx, uri, "")
	case errors.As(err, &rl):
		return &rpcError{
			Code:    middleware.CodeRateLimited,
			Message: rl.Error(),
			Data:    map[string]int64{"retryAfterMs": rl.RetryAfterMs()},
		}
	}
	a.logger.ErrorContext(ctx, "adapter: command failed", "command", c.name, "uri", uri, "error", err)
	return &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("internal error in %s", c.name)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
