// Package adapter turns typed, read-only query functions on a mark3labs/mcp-go
// server into MCP tools, resource templates, strictly parsed reads,
// completions and live subscriptions.
//
// A team already on mcp-go adds it in one line and declares its queries:
//
//	a := adapter.Wrap(srv)
//	adapter.Live(a, "customers_index", "A page of customers, searched and sorted.", listCustomers)
//	adapter.Live(a, "customers_show", "One customer.", showCustomer)
//
// Each command is a tool. Each live command whose arguments are scalars is
// also a resource template derived from the tool's published input schema:
// required arguments are path segments, optional ones the query, each group
// in name order:
//
//	app://customers_show/{id}
//	app://customers_index{?direction,page,per_page,search,sort}
//
// An agent reads an expanded URI (app://customers_show/12) and gets exactly
// what a tools/call with the same values gives; it subscribes to one and
// hears notifications/resources/updated whenever a write changes what the
// query returns (see Reads and Adapter.Changed).
//
// The guide is in the docs folder of the repository.
package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
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
}

// Wrap attaches an adapter to srv and returns it. It keeps the user's
// hooks, tools, resources and capabilities, and adds:
//   - the resources capability with subscribe (listChanged is kept as it was),
//   - the completions capability and a resource completion provider,
//   - a tool filter that hides commands the grant function refuses,
//   - hooks that route reads and subscriptions of the adapter's URIs.
//
// Like mcp-go's own options, Wrap writes to the server without locks: call
// it once, before the server serves. Wrap panics if srv is nil, if an
// option is invalid, or if the server already has client sessions.
func Wrap(srv *server.MCPServer, opts ...Option) *Adapter {
	if srv == nil {
		panic("adapter.Wrap: nil *server.MCPServer")
	}
	if hasSessions(srv) {
		panic("adapter.Wrap: the server already has client sessions; wrap it before it serves")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		panic("adapter.Wrap: " + err.Error())
	}
	a := &Adapter{
		srv:      srv,
		cfg:      cfg,
		logger:   cfg.logger,
		commands: make(map[string]*command),
	}
	a.chain = cfg.chain()

	server.WithResourceCapabilities(true, resourcesListChanged(srv))(srv)
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
// expanded, without references) is published as the tool's input schema,
// and the template is derived from that exact schema. If A or *A has a
// method Validate() error, it runs before fn on every tools/call and read.
//
// Live panics on a programming error, before anything is registered: an
// empty or invalid name, a name already declared, a nil fn, or an A that is
// not a struct.
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
	c.call = func(ctx context.Context, args any) (any, error) {
		return fn(ctx, args.(A))
	}
	c.handler = a.chain(func(ctx context.Context, call *middleware.Call) (any, error) {
		return c.call(ctx, call.Args)
	})

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

// granted applies the grant function of WithGrant.
func (a *Adapter) granted(ctx context.Context, name string) bool {
	return a.cfg.grant == nil || a.cfg.grant(ctx, name)
}

// resourcesListChanged reads the listChanged flag of srv's resources
// capability. WithResourceCapabilities replaces the whole capability and
// mcp-go has no getter, so Wrap reads it by reflection to keep it; when the
// field is not where v1.2.x keeps it, it reports false.
func resourcesListChanged(srv *server.MCPServer) (listChanged bool) {
	defer func() {
		if recover() != nil {
			listChanged = false
		}
	}()
	res := reflect.ValueOf(srv).Elem().FieldByName("capabilities").FieldByName("resources")
	if !res.IsValid() || res.Kind() != reflect.Pointer || res.IsNil() {
		return false
	}
	f := res.Elem().FieldByName("listChanged")
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}

const mimeJSON = "application/json"

// marshalResult encodes a command's result for the wire.
func marshalResult(v any) ([]byte, error) {
	return json.Marshal(v)
}
