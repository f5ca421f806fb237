package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcplive/adapter/internal/digest"
	"github.com/mcplive/adapter/middleware"
)

// command is everything the adapter knows about one declared command.
type command struct {
	name        string
	title       string
	description string
	live        bool
	confirm     bool
	argsType    reflect.Type
	// schema is the input schema exactly as tools/list publishes it, and
	// inputSchema the same compiled to check arguments (validate.go).
	schema      json.RawMessage
	inputSchema *jsonschema.Schema
	// nullable holds the places of the arguments that allow null, as
	// nullablePaths spells them.
	nullable map[string]bool
	// structured reports that tools/call answers with structuredContent
	// (an object result only).
	structured bool
	tool       mcp.Tool
	// tmpl is the URI template, nil when the command has none (reason and
	// detail say why).
	tmpl   *uriTemplate
	reason Reason
	detail string
	// resource is the plain resource scheme://name. Every command with a
	// template has one in mcp-go, as the route its reads take (see
	// read.go); it is listed only when the template is all optional.
	resource mcp.Resource
	routeURI string

	reads      []string
	completers map[string]Completer

	// cache: its reads' cache hints are its own (WithCacheTTL,
	// WithPublicCache), ttlMs cacheTTL, public when publicCache and no
	// grant or scope applies (hooks.go).
	cache       bool
	cacheTTL    time.Duration
	publicCache bool
	// notifyEvery paces its subscriptions' notifications
	// (WithNotifyInterval, pace.go); 0 for no pacing.
	notifyEvery time.Duration
	// keep: its live queries keep their results to answer reads with
	// (kept.go); false for a plain command and WithoutKeptResults.
	keep bool
	// runs counts the runs of its function, by cause (CommandRuns).
	runs [numCauses]atomic.Uint64

	// call runs the user's function; handler runs it through the
	// middleware chain.
	call    func(ctx context.Context, args any) (any, error)
	handler middleware.Handler
	// batch is the batch form of WithBatch, nil without one; batchHandler
	// runs it through the middleware chain.
	batch        *batchForm
	batchHandler middleware.Handler
	// completeHandler runs a completion of a template variable through
	// the middleware chain (complete.go); nil without a template.
	completeHandler middleware.Handler
	// resultWalk digests the results of a live command's re-runs
	// (internal/digest); nil for a result type json must write.
	resultWalk *digest.Walk
	// exactDigits: an integer of up to this many digits decodes exactly
	// into every float of the arguments type (numbers.go).
	exactDigits int
	// decodedKeys: the arguments type has a map whose keys json decodes,
	// two of which may be one (decode.go).
	decodedKeys bool
	// logger logs the panics of the user's code outside the chain
	//.
	logger *slog.Logger
}

// listed reports whether the plain resource appears in resources/list.
func (c *command) listed() bool { return c.tmpl != nil && c.tmpl.allOptional() }

func newCommand[A, R any](scheme, name, description string, live bool, opts []CommandOption) (*command, error) {
	if !validCommandName(name) {
		return nil, fmt.Errorf("command name %q: want 1 to 128 of the characters A-Z a-z 0-9 _ - .", name)
	}
	argsType := reflect.TypeFor[A]()
	if argsType.Kind() != reflect.Struct {
		return nil, fmt.Errorf("command %q: arguments type %v is not a struct", name, argsType)
	}
	if err := checkFields(argsType); err != nil {
		return nil, fmt.Errorf("command %q: arguments: %w", name, err)
	}
	var cc commandConfig
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("command %q: option %d is nil", name, i)
		}
		o(&cc)
	}
	schema, err := publishedSchema(argsType)
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", name, err)
	}
	compiled, err := compileSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("command %q: input schema: %w", name, err)
	}
	c := &command{
		name: name, title: cc.title, description: description, live: live, confirm: cc.confirm,
		argsType: argsType, exactDigits: exactDigits(argsType), decodedKeys: hasDecodedKeys(argsType, map[reflect.Type]bool{}), schema: schema, inputSchema: compiled, nullable: nullablePaths(schema),
		structured: !cc.noStructured,
		reads:      cc.reads, completers: cc.completers,
	}
	if c.tool, err = newTool(c, reflect.TypeFor[R]()); err != nil {
		return nil, fmt.Errorf("command %q: %w", name, err)
	}
	if cc.batch.fn != nil {
		if c.batch, err = newBatchForm[A, R](name, live, cc.batch); err != nil {
			return nil, err
		}
	}
	if live {
		c.resultWalk = digest.NewWalk(reflect.TypeFor[R]())
	}
	switch {
	case !live:
		c.reason = ReasonNotLive
	case cc.confirm:
		c.reason = ReasonNeedsConfirmation
	default:
		c.tmpl, c.reason, c.detail = deriveTemplate(scheme, name, schema, argsType)
	}
	if err := cc.check(name, c.tmpl, c.reason, c.detail); err != nil {
		return nil, err
	}
	c.cache, c.cacheTTL, c.publicCache = cc.hasTTL || cc.publicCache, cc.cacheTTL, cc.publicCache
	c.notifyEvery = cc.notifyEvery
	c.keep = live && c.tmpl != nil && !cc.noKept
	for v := range cc.completers {
		if c.tmpl == nil || c.tmpl.variable(v) == nil {
			return nil, fmt.Errorf("command %q: completer for %q, which is not a variable of its template", name, v)
		}
	}
	if c.tmpl != nil {
		c.routeURI = scheme + "://" + name
		c.resource = mcp.NewResource(c.routeURI, name, mcp.WithResourceTitle(c.title),
			mcp.WithResourceDescription(description), mcp.WithMIMEType(mimeJSON))
	}
	return c, nil
}

// newTool is the MCP tool of c, whose result type is r. Live commands are
// read-only and idempotent, and say so; other commands are neither.
//
// Both schemas are given raw, so that tools/list publishes the exact bytes
// that arguments are checked against. mcp-go refuses to list a tool that
// has both a raw and a structured schema (see Tool.MarshalJSON), so the
// structured ones stay empty: InputSchema.Type included, which mcp.NewTool
// would set.
func newTool(c *command, r reflect.Type) (mcp.Tool, error) {
	t := mcp.Tool{
		Name:           c.name,
		Title:          c.title,
		Description:    c.description,
		RawInputSchema: c.schema,
		Annotations: mcp.ToolAnnotation{
			ReadOnlyHint:   mcp.ToBoolPtr(c.live),
			IdempotentHint: mcp.ToBoolPtr(c.live),
		},
	}
	if !c.structured {
		return t, nil
	}
	out, ok, err := outputSchema(r)
	if err != nil {
		return t, err
	}
	if ok {
		t.RawOutputSchema = out
	}
	return t, nil
}

// variable finds a template variable by name, nil when there is none.
func (t *uriTemplate) variable(name string) *variable {
	for _, group := range [][]variable{t.path, t.query} {
		for i := range group {
			if group[i].name == name {
				return &group[i]
			}
		}
	}
	return nil
}

func validCommandName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || isAlpha(c)) {
			return false
		}
	}
	return true
}

// invoke runs the command with canonical JSON arguments through the
// middleware chain, as origin.
func (c *command) invoke(ctx context.Context, origin middleware.Origin, raw json.RawMessage) (any, error) {
	args, err := c.decode(raw)
	if err != nil {
		return nil, err
	}
	return c.invokeDecoded(ctx, origin, args, raw)
}

// invokeDecoded runs the command through the middleware chain with
// arguments already decoded (and validated) from raw. A live query decodes
// once and re-runs with the same value.
func (c *command) invokeDecoded(ctx context.Context, origin middleware.Origin, args any, raw json.RawMessage) (any, error) {
	call := &middleware.Call{
		Command: c.name,
		Args:    args,
		RawArgs: raw,
		Origin:  origin,
	}
	if origin == middleware.Agent {
		call.Session = sessionFrom(ctx)
	}
	return c.invokeCall(ctx, call)
}

// invokeCall runs the command through the middleware chain with call.
func (c *command) invokeCall(ctx context.Context, call *middleware.Call) (any, error) {
	return c.handler(middleware.WithOrigin(ctx, call.Origin), call)
}

// Call runs the command named name with args (any value that encodes to
// the command's JSON arguments: its argument struct, a map, or
// json.RawMessage) through the middleware chain as the application itself
// (origin App), which rate limits do not apply to. It answers what a
// tools/call would, as Go values: the result, or a *ValidationError,
// ErrNotFound (wrapped), or the command's own error.
func (a *Adapter) Call(ctx context.Context, name string, args any) (any, error) {
	c := a.command(name)
	if c == nil {
		return nil, fmt.Errorf("adapter: %q: %w", name, ErrUnknownCommand)
	}
	var raw json.RawMessage
	switch v := args.(type) {
	case json.RawMessage:
		raw = v
	default:
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("adapter: encoding the arguments of %s: %w", name, err)
		}
		raw = b
	}
	canonical, err := canonicalArguments(raw)
	if err != nil {
		return nil, err
	}
	return c.invoke(ctx, middleware.App, canonical)
}

// Panics of the user's code outside the middleware chain.
//
// The chain's Recover turns a panicking command into a
// *middleware.PanicError, so that one bad call fails alone. The adapter
// also runs code of the user's outside the chain: the arguments type's
// Validate and UnmarshalJSON while it checks arguments, the result's
// MarshalJSON while it answers and while a re-run digests the result, the
// grant function (which grants nothing when it panics), the client key
// function (which keys the request "" when it panics) and the change
// feed's Publish. A
// panic there would end the process on stdio, and always on a re-run's
// worker, where no request can carry it. recoverUserPanic, deferred around
// each, fails the call alone as Recover would: the error names only the
// command, and the panic value and stack go to the log.

// recoverUserPanic, deferred, turns a panic of the caller into a
// *middleware.PanicError for command in *err, logged at Error by logger
// with what the adapter was doing (during).
func recoverUserPanic(logger *slog.Logger, command, during string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	perr := &middleware.PanicError{Command: command, Value: v, Stack: debug.Stack()}
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(context.Background(), slog.LevelError, "adapter: user code panicked",
		slog.String("command", command),
		slog.String("during", during),
		slog.Any("panic", v),
		slog.String("stack", string(perr.Stack)),
	)
	*err = perr
}
