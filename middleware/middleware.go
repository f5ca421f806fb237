// Package middleware is the chain every command invocation of an
// adapter passes through: a tools/call, a resources/read of an expanded URI,
// the first run of a subscription, a completion of a template variable
// (Call.Completion), the application's own Adapter.Call (origin App), and
// (marked with origin Live) every re-run of a live query.
//
// A Middleware wraps a Handler, the way net/http middleware wraps an
// http.Handler:
//
//	func Timing(next middleware.Handler) middleware.Handler {
//		return func(ctx context.Context, call *middleware.Call) (any, error) {
//			start := time.Now()
//			defer func() { log.Printf("%s took %v", call.Command, time.Since(start)) }()
//			return next(ctx, call)
//		}
//	}
//
// The built-ins cover what most servers need:
//
//   - RateLimit refuses agents that call one command too often, per session
//     or client address, with a *RateLimitError (CodeRateLimited on the wire);
//   - Recover turns a panicking command into a *PanicError that leaks nothing;
//   - Log writes one log/slog record per call;
//   - Timeout bounds how long a command may run;
//   - Default is Log and Recover in the order that logs everything once.
//
// Every middleware sees the origin of the call (App, Agent or Live, see
// OriginFrom) and can treat them differently: RateLimit, for one, leaves the
// application's own calls and live re-runs alone.
//
// On stateless Streamable HTTP the sessions carry no ID, and RateLimit needs
// the client's address instead; install RemoteAddrHandler or
// RemoteAddrContext on the HTTP transport to provide it.
package middleware

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/server"
)

// Origin says who asked for a command invocation.
type Origin uint8

const (
	// App is the application's own call, outside MCP. It is the origin of a
	// context that carries none.
	App Origin = iota
	// Agent is MCP traffic: a tools/call, a resources/read, the first run
	// of a subscription, or a completion.
	Agent
	// Live is the re-run of a live query after a change, on behalf of its
	// subscribers. Rate limits do not apply to it.
	Live
)

// String returns "app", "agent" or "live".
func (o Origin) String() string {
	switch o {
	case Agent:
		return "agent"
	case Live:
		return "live"
	default:
		return "app"
	}
}

type originKey struct{}

// WithOrigin returns a copy of ctx that carries origin o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom reports the origin ctx carries, or App when it carries none.
func OriginFrom(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}

// Call describes one command invocation as the chain sees it.
type Call struct {
	// Command is the command's name, as registered and as the tool is named.
	Command string
	// Args is the decoded and validated argument value, of the command's
	// argument type A (a struct, not a pointer).
	Args any
	// RawArgs is the canonical JSON of Args as the command received it:
	// object keys sorted, absent optional fields left out.
	RawArgs json.RawMessage
	// Origin says who asked; it equals OriginFrom(ctx).
	Origin Origin
	// Session is the MCP client session the call came from, or nil for
	// calls of origin App and Live. On stateless Streamable HTTP
	// (protocol 2026-07-28) it is a short-lived session without an ID.
	Session server.ClientSession
	// Batch is, for a batched re-run of a live query (the batch form of
	// adapter.WithBatch, origin Live), the number of argument sets the
	// call carries: Args is then a slice of that many argument values,
	// and RawArgs the JSON array of their canonical arguments. It is 0
	// for every other call.
	Batch int
	// Completion is set when the call is a completion/complete of one of
	// the command's template variables rather than a run of the command:
	// Args and RawArgs are then nil. It passes the chain so that
	// completions count against the command's rate limit like reads.
	Completion *Completion
}

// Completion describes a completion request passing the chain.
type Completion struct {
	// Variable is the template variable being completed.
	Variable string
	// Prefix is what the user typed so far.
	Prefix string
}

// KeptResult is what the innermost step of the chain returns, in place of
// running the command, for a read or a tools/call (origin Agent) of a live
// command whose live query keeps a current result: the result the query's
// last run computed, encoded (see adapter.WithKeptResults). A middleware
// that looks at results sees a KeptResult instead of the command's own
// type on such calls, and can tell by it that the command did not run; a
// middleware that returns another value has that value answered, as a
// result of the command's would be.
type KeptResult struct {
	// JSON is the result as a read answers it.
	JSON string
}

// Handler runs a command invocation and returns its result.
type Handler func(ctx context.Context, call *Call) (any, error)

// Middleware wraps a Handler with behaviour of its own.
type Middleware func(next Handler) Handler

// Chain composes mws into one Middleware. The first is the outermost: it
// sees the call first and the result last. A nil Middleware is skipped.
func Chain(mws ...Middleware) Middleware {
	// A copy: Chain(list...) passes the caller's own slice, and a chain
	// already built must not change when the caller reuses it.
	mws = slices.Clone(mws)
	return func(next Handler) Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i] != nil {
				next = mws[i](next)
			}
		}
		return next
	}
}
