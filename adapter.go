package adapter

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// Adapter serves the commands declared on it through the mcp-go server it
// wraps. Create one with Wrap; declare commands with Live and Command.
// Its methods are safe for concurrent use.
type Adapter struct {
	srv    *server.MCPServer
	cfg    config
	chain  middleware.Middleware
	logger *slog.Logger

	mu       sync.RWMutex
	commands map[string]*command

	// live is the registry of subscriptions (liveregistry.go).
	live *liveRegistry
	// owners are the sessions' identities (owners.go), stateless the
	// requests in flight on stateless HTTP (cancel.go): HTTPHandler's.
	owners    sessionOwners
	stateless statelessRequests
}

// Wrap attaches an adapter to srv and returns it. It keeps the user's
// hooks, tools, resources and capabilities, and adds:
//   - the resources capability with subscribe (listChanged is kept as it was),
//   - the completions capability and a resource completion provider,
//   - a tool filter that hides commands the grant function refuses,
//   - hooks that route reads and subscriptions of the adapter's URIs.
//
// The adapter's hooks run after those the server has when Wrap is called,
// and before any added later. A resources/subscribe is served in a
// request-initialization hook (it is the only hook that can fail the
// request), so a request-initialization hook that refuses requests belongs
// before Wrap: added after, it would refuse a subscribe whose subscription
// the adapter had already made.
//
// Like mcp-go's own options, Wrap writes to the server without locks: call
// it once, before the server serves. Wrap panics if srv is nil, if an
// option is invalid, if the server already has client sessions, or if it
// is wrapped already: one server has one adapter.
func Wrap(srv *server.MCPServer, opts ...Option) *Adapter {
	if srv == nil {
		panic("adapter.Wrap: nil *server.MCPServer")
	}
	serving, knowsSessions := hasSessions(srv)
	if serving {
		panic("adapter.Wrap: the server already has client sessions; wrap it before it serves")
	}
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("adapter.Wrap: option %d is nil", i))
		}
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		panic("adapter.Wrap: " + err.Error())
	}
	if wrapped, _ := wrappedAlready(srv); wrapped {
		panic("adapter.Wrap: the server is wrapped already; wrap each server once, and declare every command on that adapter")
	}
	if cfg.observer != nil {
		cfg.observer = guardedObserver{o: cfg.observer, guard: &observerGuard{logger: cfg.logger}}
	}
	a := &Adapter{
		srv:      srv,
		cfg:      cfg,
		logger:   cfg.logger,
		commands: make(map[string]*command),
	}
	a.chain = cfg.chain()
	if !knowsSessions {
		a.logger.Warn("adapter: cannot tell with this mcp-go version whether the server already serves; " +
			"call Wrap before it does")
	}

	listChanged, ok := resourcesListChanged(srv)
	if !ok {
		a.logger.Warn("adapter: cannot read the resources capability's listChanged flag of this mcp-go version; " +
			"Wrap sets it to false (set it again with server.WithResourceCapabilities after Wrap if you need it)")
	}
	server.WithResourceCapabilities(true, listChanged)(srv)
	server.WithToolFilter(a.filterTools)(srv)
	server.WithCompletions()(srv)
	server.WithResourceCompletionProvider(completionProvider{a})(srv)
	hooks := srv.GetHooks()
	if hooks == nil {
		hooks = &server.Hooks{}
		server.WithHooks(hooks)(srv)
	}
	a.installHooks(hooks)
	a.initLive()
	return a
}

// Server returns the mcp-go server the adapter wraps.
func (a *Adapter) Server() *server.MCPServer { return a.srv }

// Live declares a read-only command: a tool, and, when its arguments
// flatten to scalar variables, a resource template that agents can read and
// subscribe to. fn must not write: a subscription re-runs it whenever
// something it read changes (see Reads).
//
// A is the arguments type, a struct. Its JSON schema (invopop/jsonschema,
// expanded, with references only for a type that contains itself) is
// published as the tool's input schema, and the template is derived from
// that exact schema. If A or *A has a method Validate() error, it runs
// before fn on every tools/call and read.
//
// Live panics on a programming error, before anything is registered: an
// empty or invalid name, a name already declared, a nil fn or option, an A
// that is not a struct or that the adapter could not serve as its schema
// says (a property encoding/json decodes into another field, a jsonschema
// tag keyword invopop would drop, ",string" on a string: docs/commands.md
// lists them), a schema the validator cannot compile, a completer for a
// variable the template lacks, a WithBatch of other types, or a name whose
// plain resource the server already has.
func Live[A, R any](a *Adapter, name, description string, fn func(context.Context, A) (R, error), opts ...CommandOption) {
	register(a, name, description, fn, true, opts)
}

// Command declares a command that may write: a tool only, never a resource.
// After its write commits it should call Adapter.Changed with what it
// changed, so that live queries that read it re-run.
//
// Command panics on the same programming errors as Live.
func Command[A, R any](a *Adapter, name, description string, fn func(context.Context, A) (R, error), opts ...CommandOption) {
	register(a, name, description, fn, false, opts)
}

func register[A, R any](a *Adapter, name, description string, fn func(context.Context, A) (R, error), live bool, opts []CommandOption) {
	if a == nil {
		panic("adapter: Live/Command on a nil *Adapter")
	}
	if fn == nil {
		panic(fmt.Sprintf("adapter: command %q: nil function", name))
	}
	c, err := newCommand[A, R](a.cfg.scheme, name, description, live, opts)
	if err != nil {
		panic("adapter: " + err.Error())
	}
	c.logger = a.logger
	c.call = func(ctx context.Context, args any) (any, error) {
		return fn(ctx, args.(A))
	}
	c.handler = a.chain(func(ctx context.Context, call *middleware.Call) (any, error) {
		if kept, ok := c.innermost(ctx, call, a.live); ok {
			return kept, nil // answered from the live query's result (kept.go)
		}
		if call.Origin == middleware.Live {
			// A re-run with nothing of the user's around it may give
			// its result a place to go (resultSlot): returned as a
			// pointer, it is not boxed.
			if p, ok := resultSlot(ctx).(*R); ok {
				var err error
				*p, err = fn(ctx, call.Args.(A))
				return p, err
			}
		}
		return c.call(ctx, call.Args)
	})
	a.chainBatch(c)
	a.chainComplete(c)

	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.commands[name]; dup {
		panic(fmt.Sprintf("adapter: command %q declared twice", name))
	}
	if c.routeURI != "" {
		if _, taken := a.srv.ListResources()[c.routeURI]; taken {
			panic(fmt.Sprintf("adapter: command %q: the server already has a resource %s", name, c.routeURI))
		}
	}
	a.commands[name] = c
	a.srv.AddTool(c.tool, a.toolHandler(c))
	if c.tmpl != nil {
		a.srv.AddResource(c.resource, a.readHandler(c))
		a.srv.AddResourceTemplate(
			mcp.NewResourceTemplate(c.tmpl.raw, name, mcp.WithTemplateTitle(c.title),
				mcp.WithTemplateDescription(description),
				mcp.WithTemplateMIMEType(mimeJSON)),
			server.ResourceTemplateHandlerFunc(a.readHandler(c)))
	}
}

// command looks a declared command up by name.
func (a *Adapter) command(name string) *command {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.commands[name]
}

// granted applies the grant function of WithGrant. One that panics grants
// nothing, and the request goes on as for a command not granted
// (command.go).
func (a *Adapter) granted(ctx context.Context, name string) (ok bool) {
	if a.cfg.grant == nil {
		return true
	}
	var err error
	defer func() {
		if err != nil {
			ok = false
		}
	}()
	defer recoverUserPanic(a.logger, name, "asking the grant function", &err)
	return a.cfg.grant(ctx, name)
}

// scopeOf asks the scope function (WithScope) the scope of the request of
// ctx for command name: "" when none is set, or the error that refuses the
// request.
func (a *Adapter) scopeOf(ctx context.Context, name string) (scope string, refused *rpcError) {
	if a.cfg.scope == nil {
		return "", nil
	}
	var err error
	defer func() {
		if err != nil {
			scope, refused = "", scopeRefused(err)
		}
	}()
	defer recoverUserPanic(a.logger, name, "asking the scope function", &err)
	scope, err = a.cfg.scope(ctx)
	return scope, nil
}

// scopeRefused is the answer to a request whose scope function failed.
func scopeRefused(err error) *rpcError {
	return &rpcError{Code: mcp.INVALID_REQUEST, Message: "the request has no scope: " + err.Error(), refused: true}
}

const mimeJSON = "application/json"

// marshalResult encodes a result of c for the wire. A MarshalJSON of the
// user's that panics fails the answer alone (command.go).
func (c *command) marshalResult(v any) (b []byte, err error) {
	defer recoverUserPanic(c.logger, c.name, "encoding the result", &err)
	return marshalEmptyNils(v) // encode.go: nil slices and maps written empty
}
