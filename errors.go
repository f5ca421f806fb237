package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// ErrNotFound is the error a live command returns (wrapped or not) when the
// thing its arguments name does not exist. A resources/read then answers
// resource-not-found for the protocol era, exactly as for a URI no command
// owns, and a tools/call answers an isError result.
var ErrNotFound = errors.New("not found")

// ErrUnknownCommand is the error of Adapter.Call for a name no command was
// declared with.
var ErrUnknownCommand = errors.New("no such command")

// FieldError is one thing wrong with one argument.
type FieldError struct {
	// Field is the argument's name as the URI and the JSON schema spell it,
	// "" when the error concerns the arguments as a whole.
	Field string `json:"field"`
	// Message says what is wrong, for a person or an agent to read.
	Message string `json:"message"`
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// ValidationError lists everything wrong with a command's arguments: the
// conversion of a URI's strings, the decoding of a tools/call's JSON, or the
// command's own Validate method. On the wire it is JSON-RPC error -32602
// (invalid params) with data {"errors": [{"field": …, "message": …}, …]}.
//
// A Validate method may return a *ValidationError to name several fields;
// any other error it returns becomes one FieldError with an empty Field.
type ValidationError struct {
	Errors []FieldError `json:"errors"`
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments: ")
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Add records that field is wrong, saying why. Validate methods collect
// every problem this way and return Err:
//
//	func (a PageArgs) Validate() error {
//		var errs adapter.ValidationError
//		if a.Page < 1 {
//			errs.Add("page", "must be at least 1")
//		}
//		return errs.Err()
//	}
func (e *ValidationError) Add(field, message string) {
	e.Errors = append(e.Errors, FieldError{Field: field, Message: message})
}

// Err returns e when it holds any field error and nil otherwise, so that a
// Validate method can end with return errs.Err(). (Returning e itself when
// empty would be a non-nil error interface holding no errors.)
func (e *ValidationError) Err() error {
	if e == nil || len(e.Errors) == 0 {
		return nil
	}
	return e
}

// asValidationError turns what Validate returned into a *ValidationError.
func asValidationError(err error) *ValidationError {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	var fe FieldError
	if errors.As(err, &fe) {
		return &ValidationError{Errors: []FieldError{fe}}
	}
	var pfe *FieldError
	if errors.As(err, &pfe) && pfe != nil {
		return &ValidationError{Errors: []FieldError{*pfe}}
	}
	return &ValidationError{Errors: []FieldError{{Message: err.Error()}}}
}

// What a failure answers on the wire. One classification (classify) serves
// every surface: a read, a subscription, a tools/call, a completion. The
// adapter's OnError hook records the exact error of a failed request for the
// transport edges, which swap it in where mcp-go can only write -32603
// (rewrite.go).

// rpcError is a JSON-RPC error as the adapter means it to reach the client.
// mcp-go sends every handler error as -32603 with the error's text as
// message, so Error returns only Message, never internals; the transport
// edges (HTTPHandler, ServeStdio, adaptertest) send Code and Data too.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
	// refused: the scope function refused the request (scopeRefused), or
	// the grant a re-run (errRerunNotGranted).
	refused bool
}

func (e *rpcError) Error() string { return e.Message }

// JSONRPCError makes an rpcError what mcp-go sends as it is when a handler
// returns it through server.NewHandlerError (wire).
func (e *rpcError) JSONRPCError() mcp.JSONRPCError {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, Error: mcp.NewJSONRPCErrorDetails(e.Code, e.Message, e.Data)}
}

// wire is e as a handler's error that mcp-go answers with e's code,
// message and data.
func (e *rpcError) wire() error { return server.NewHandlerError(e) }

// notFound is resource-not-found for the request's protocol era: -32002
// before 2026-07-28 and -32602 from it on, with the URI in data either way.
// detail, when set, says what was wrong with the URI.
func notFound(ctx context.Context, uri, detail string) *rpcError {
	code := mcp.RESOURCE_NOT_FOUND
	if server.IsModernRequest(ctx) {
		code = mcp.INVALID_PARAMS
	}
	msg := "resource not found: " + displayURI(uri)
	if detail != "" {
		msg += ": " + detail
	}
	return &rpcError{Code: code, Message: msg, Data: map[string]string{"uri": uri}}
}

// failure is what an invocation's error means to the agent, decided in one
// place for every surface: reads, tools/call, subscriptions, completion.
type failure struct {
	kind failureKind
	// The error of its kind, when it has one of its own.
	rpc  *rpcError
	uri  *uriError
	args *ValidationError
	rate *middleware.RateLimitError
}

type failureKind uint8

const (
	failInternal    failureKind = iota // logged; the agent learns only that it failed
	failPrepared                       // already a wire error (rpc)
	failMalformed                      // the URI does not fit the template (uri)
	failInvalid                        // the arguments are wrong (args)
	failNotFound                       // ErrNotFound from the command
	failRateLimited                    // refused by the rate limit (rate)
)

func classify(err error) failure {
	var f failure
	switch {
	case errors.As(err, &f.rpc):
		f.kind = failPrepared
	case errors.As(err, &f.uri):
		f.kind = failMalformed
	case errors.As(err, &f.args):
		f.kind = failInvalid
	case errors.Is(err, ErrNotFound):
		f.kind = failNotFound
	case errors.As(err, &f.rate):
		f.kind = failRateLimited
	}
	return f
}

// readError turns what an invocation returned into the error a
// resources/read (or a subscription) answers. Errors it does not know are
// internal: they are logged, and the client learns only that the command
// failed.
func (a *Adapter) readError(ctx context.Context, c *command, uri string, err error) *rpcError {
	switch f := classify(err); f.kind {
	case failPrepared:
		if f.rpc == errNotGranted {
			// Exactly as a URI no command owns.
			return notFound(ctx, uri, "")
		}
		return f.rpc
	case failMalformed:
		return notFound(ctx, uri, f.uri.reason)
	case failInvalid:
		return &rpcError{Code: mcp.INVALID_PARAMS, Message: f.args.Error(), Data: f.args}
	case failNotFound:
		return notFound(ctx, uri, "")
	case failRateLimited:
		return rateLimited(f.rate)
	}
	return a.internal(ctx, c, uri, err)
}

func rateLimited(rl *middleware.RateLimitError) *rpcError {
	return &rpcError{
		Code:    middleware.CodeRateLimited,
		Message: rl.Error(),
		Data:    map[string]int64{"retryAfterMs": rl.RetryAfterMs()},
	}
}

// internal logs an error the agent must not see and answers without it. A
// command that ended because the request was cancelled did not fail: the
// client gave up (a completion overtaken by the next keystroke, a closed
// connection), which is logged at Debug only.
func (a *Adapter) internal(ctx context.Context, c *command, uri string, err error) *rpcError {
	level := slog.LevelError
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		level = slog.LevelDebug
	}
	a.logger.Log(ctx, level, "adapter: command failed", "command", c.name, "uri", uri, "error", err)
	return &rpcError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("internal error in %s", c.name)}
}

// onError records, for the transport edges (HTTPHandler, ServeStdio,
// adaptertest), the exact JSON-RPC error a failed request should answer.
// mcp-go itself can only send -32603 without data for a handler's error.
func (a *Adapter) onError(ctx context.Context, id any, method mcp.MCPMethod, message any, err error) {
	box := errorBoxFrom(ctx)
	if box == nil {
		return
	}
	if e := a.wireError(ctx, method, message, err); e != nil {
		box.put(id, e)
	}
}

// wireError decides the error a failed request answers on the wire, or nil
// to leave mcp-go's as it is: a hook's refusal (subscribe, listen,
// completion, a repeated key), which mcp-go would answer -32600 or -32603
// without data, and mcp-go's own resource-not-found. A read's own errors
// need nothing: readHandler returns them through server.NewHandlerError.
func (a *Adapter) wireError(ctx context.Context, method mcp.MCPMethod, message any, err error) *rpcError {
	if method != mcp.MethodResourcesRead {
		var rpc *rpcError
		if errors.As(err, &rpc) {
			return rpc
		}
		return nil
	}
	if req, _ := message.(*mcp.ReadResourceRequest); req != nil && errors.Is(err, server.ErrResourceNotFound) {
		// A URI no command of ours owns: answer in the form ours do, so
		// that an ungranted command is indistinguishable from none.
		return notFound(ctx, req.Params.URI, "")
	}
	return nil
}

// toolError is the isError result of a failed tools/call: the same
// classification as a read, in the form tools answer with.
func (a *Adapter) toolError(ctx context.Context, c *command, err error) *mcp.CallToolResult {
	var text string
	var structured any
	switch f := classify(err); f.kind {
	case failInvalid:
		text, structured = f.args.Error(), f.args
	case failNotFound:
		// The command's own words ("customer 99: not found") are meant for
		// the agent.
		text = err.Error()
		structured = map[string]string{"error": "not found", "message": text}
	case failRateLimited:
		text = f.rate.Error()
		structured = map[string]any{"error": "rate limited", "code": middleware.CodeRateLimited, "retryAfterMs": f.rate.RetryAfterMs()}
	default:
		text = a.internal(ctx, c, "", err).Message
	}
	res := mcp.NewToolResultError(text)
	res.StructuredContent = structured
	return res
}
