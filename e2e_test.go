package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// The protocol eras every end-to-end test runs on.
var eras = []struct {
	name    string
	options []client.ClientOption
}{
	{"2026-07-28", nil},
	{"2025-11-25", []client.ClientOption{client.WithProtocolVersion("2025-11-25")}},
}

type showArgs struct {
	ID int64 `json:"id"`
}

type customer struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type indexArgs struct {
	Search string `json:"search,omitempty"`
	Page   int    `json:"page,omitempty"`
}

type page struct {
	Customers []customer `json:"customers"`
	Total     int        `json:"total"`
}

type createArgs struct {
	Name string `json:"name"`
}

type idsArgs struct {
	IDs []int64 `json:"ids"`
}

var names = []string{"Ada Lovelace", "Alan Turing", "Grace Hopper"}

// newServer builds a server with a tool and a resource of the user's own and
// the adapter's commands on top.
func newServer(t *testing.T, opts ...adapter.Option) (*server.MCPServer, *adapter.Adapter) {
	t.Helper()
	srv := server.NewMCPServer("test", "1.0.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("user_tool", mcp.WithDescription("the user's own")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("mine"), nil
		})
	srv.AddResource(mcp.NewResource("app://user_resource", "user_resource"),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "mine"}}, nil
		})
	a := adapter.Wrap(srv, opts...)
	adapter.Live(a, "customers_show", "One customer.", func(_ context.Context, args showArgs) (customer, error) {
		if args.ID < 1 || int(args.ID) > len(names) {
			return customer{}, fmt.Errorf("customer %d: %w", args.ID, adapter.ErrNotFound)
		}
		return customer{ID: args.ID, Name: names[args.ID-1]}, nil
	})
	adapter.Live(a, "customers_index", "A page of customers.", func(_ context.Context, args indexArgs) (page, error) {
		var p page
		for i, n := range names {
			if strings.Contains(strings.ToLower(n), strings.ToLower(args.Search)) {
				p.Customers = append(p.Customers, customer{ID: int64(i + 1), Name: n})
			}
		}
		p.Total = len(p.Customers)
		return p, nil
	})
	adapter.Live(a, "customers_by_ids", "Several customers.", func(context.Context, idsArgs) ([]customer, error) {
		return nil, nil
	})
	adapter.Live(a, "customers_export", "Everything.", func(context.Context, struct{}) ([]customer, error) {
		return nil, nil
	}, adapter.NeedsConfirmation())
	adapter.Command(a, "customers_create", "Create a customer.", func(_ context.Context, args createArgs) (customer, error) {
		return customer{ID: 4, Name: args.Name}, nil
	})
	return srv, a
}

func connect(t *testing.T, srv *server.MCPServer, opts ...client.ClientOption) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClientWithOptions(srv, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEndToEndListsAndCalls(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			srv, _ := newServer(t)
			c := connect(t, srv, era.options...)
			ctx := context.Background()

			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var toolNames []string
			for _, tool := range tools.Tools {
				toolNames = append(toolNames, tool.Name)
			}
			slices.Sort(toolNames)
			wantTools := []string{"customers_by_ids", "customers_create", "customers_export", "customers_index", "customers_show", "user_tool"}
			if !slices.Equal(toolNames, wantTools) {
				t.Errorf("tools = %v, want %v", toolNames, wantTools)
			}

			templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			if err != nil {
				t.Fatalf("resources/templates/list: %v", err)
			}
			var got []string
			for _, tmpl := range templates.ResourceTemplates {
				got = append(got, tmpl.Name+" "+tmpl.URITemplate.Raw()+" "+tmpl.MIMEType+" "+tmpl.Description)
			}
			want := []string{
				"customers_index app://customers_index{?page,search} application/json A page of customers.",
				"customers_show app://customers_show/{id} application/json One customer.",
			}
			if !slices.Equal(got, want) {
				t.Errorf("templates =\n%q\nwant\n%q", got, want)
			}

			resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			var uris []string
			for _, r := range resources.Resources {
				uris = append(uris, r.URI)
			}
			if !slices.Equal(uris, []string{"app://customers_index", "app://user_resource"}) {
				t.Errorf("resources = %v, want the all-optional command's and the user's", uris)
			}

			call := mcp.CallToolRequest{}
			call.Params.Name = "customers_index"
			call.Params.Arguments = map[string]any{"search": "ada"}
			res, err := c.CallTool(ctx, call)
			if err != nil || res.IsError {
				t.Fatalf("tools/call: %v %+v", err, res)
			}
			text := res.Content[0].(mcp.TextContent).Text
			var p page
			if err := json.Unmarshal([]byte(text), &p); err != nil || p.Total != 1 || p.Customers[0].Name != "Ada Lovelace" {
				t.Errorf("customers_index(search=ada) = %s (%v)", text, err)
			}
			if res.StructuredContent == nil {
				t.Errorf("an object result should also be structured content")
			}

			call.Params.Name = "user_tool"
			call.Params.Arguments = nil
			if res, err := c.CallTool(ctx, call); err != nil || res.Content[0].(mcp.TextContent).Text != "mine" {
				t.Errorf("the user's tool: %v %+v", err, res)
			}
		})
	}
}

func TestEndToEndToolErrors(t *testing.T) {
	srv, _ := newServer(t)
	c := connect(t, srv)
	ctx := context.Background()
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"customers_show", map[string]any{"id": 99}, "customer 99: not found"},
		{"customers_show", map[string]any{}, "id: is required"},
		{"customers_show", map[string]any{"id": "twelve"}, "id: must be an integer"},
		{"customers_show", map[string]any{"id": 1, "extra": true}, `extra: is not an argument`},
		{"customers_index", map[string]any{"page": 1.5}, "page: must be an integer"},
	}
	for _, tc := range cases {
		call := mcp.CallToolRequest{}
		call.Params.Name = tc.name
		call.Params.Arguments = tc.args
		res, err := c.CallTool(ctx, call)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.name, tc.args, err)
		}
		text := res.Content[0].(mcp.TextContent).Text
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v = %q (isError %v), want an error containing %q", tc.name, tc.args, text, res.IsError, tc.want)
		}
	}
}

func TestEndToEndReadsOnBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			srv, _ := newServer(t)
			c := connect(t, srv, era.options...)
			ctx := context.Background()
			for uri, want := range map[string]string{
				"app://customers_show/2":               `{"id":2,"name":"Alan Turing"}`,
				"app://customers_index?search=grace":   `{"customers":[{"id":3,"name":"Grace Hopper"}],"total":1}`,
				"app://customers_index":                `{"customers":[{"id":1,"name":"Ada Lovelace"},{"id":2,"name":"Alan Turing"},{"id":3,"name":"Grace Hopper"}],"total":3}`,
				"app://customers_index?page=1&search=": `{"customers":[{"id":1,"name":"Ada Lovelace"},{"id":2,"name":"Alan Turing"},{"id":3,"name":"Grace Hopper"}],"total":3}`,
				"app://user_resource":                  "mine",
			} {
				req := mcp.ReadResourceRequest{}
				req.Params.URI = uri
				res, err := c.ReadResource(ctx, req)
				if err != nil {
					t.Errorf("read %s: %v", uri, err)
					continue
				}
				content, ok := res.Contents[0].(mcp.TextResourceContents)
				if !ok || content.Text != want || content.URI != uri {
					t.Errorf("read %s = %+v, want text %s with the URI sent", uri, res.Contents[0], want)
				}
				if uri != "app://user_resource" && content.MIMEType != "application/json" {
					t.Errorf("read %s: mimeType %q", uri, content.MIMEType)
				}
			}
			for _, uri := range []string{
				"app://customers_show/99",       // the command says not found
				"app://customers_show/2/extra",  // one segment too many
				"app://customers_show/2?page=1", // a parameter the template does not name
				"app://customers_index?page=1&page=2",
				"app://customers_export", // needs confirmation: no resource
				"app://customers_by_ids", // a list: no resource
				"app://nobody/1",
			} {
				req := mcp.ReadResourceRequest{}
				req.Params.URI = uri
				if _, err := c.ReadResource(ctx, req); err == nil {
					t.Errorf("read %s: want an error", uri)
				}
			}
		})
	}
}

func TestGrantHidesCommands(t *testing.T) {
	srv, _ := newServer(t, adapter.WithGrant(func(_ context.Context, name string) bool {
		return name != "customers_show"
	}))
	c := connect(t, srv)
	ctx := context.Background()
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "customers_show" {
			t.Error("an ungranted command is listed as a tool")
		}
	}
	templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range templates.ResourceTemplates {
		if tmpl.Name == "customers_show" {
			t.Error("an ungranted command is listed as a template")
		}
	}
	call := mcp.CallToolRequest{}
	call.Params.Name = "customers_show"
	call.Params.Arguments = map[string]any{"id": 1}
	_, errShow := c.CallTool(ctx, call)
	call.Params.Name = "customers_nonexistent"
	_, errNone := c.CallTool(ctx, call)
	if errShow == nil || errNone == nil || strings.ReplaceAll(errShow.Error(), "customers_show", "X") != strings.ReplaceAll(errNone.Error(), "customers_nonexistent", "X") {
		t.Errorf("calling an ungranted tool: %v; a missing one: %v; want the same error", errShow, errNone)
	}
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "app://customers_show/1"
	if _, err := c.ReadResource(ctx, req); err == nil {
		t.Error("reading an ungranted command succeeded")
	}
}

func TestRegistrationPanics(t *testing.T) {
	fn := func(context.Context, showArgs) (customer, error) { return customer{}, nil }
	cases := map[string]func(a *adapter.Adapter){
		"twice": func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", fn)
			adapter.Live(a, "x", "", fn)
		},
		"nil function": func(a *adapter.Adapter) {
			adapter.Live[showArgs, customer](a, "x", "", nil)
		},
		"arguments not a struct": func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", func(context.Context, int) (int, error) { return 0, nil })
		},
		"bad name": func(a *adapter.Adapter) {
			adapter.Command(a, "has space", "", fn)
		},
		"completer for a missing variable": func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", fn, adapter.CompleteWith("nope", nil))
		},
	}
	for name, register := range cases {
		t.Run(name, func(t *testing.T) {
			a := adapter.Wrap(server.NewMCPServer("t", "1"))
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			register(a)
		})
	}
	t.Run("bad scheme", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "scheme") {
				t.Errorf("recovered %v, want a panic naming the scheme", r)
			}
		}()
		adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithScheme("1bad"))
	})
}

func TestInspect(t *testing.T) {
	_, a := newServer(t)
	r := a.Inspect()
	byName := map[string]adapter.CommandReport{}
	for _, c := range r.Commands {
		byName[c.Name] = c
	}
	if got := byName["customers_show"]; got.Template != "app://customers_show/{id}" || got.Resource != "" {
		t.Errorf("customers_show: %+v", got)
	}
	if got := byName["customers_index"]; got.Resource != "app://customers_index" {
		t.Errorf("customers_index: %+v", got)
	}
	if got := byName["customers_by_ids"]; got.Reason != adapter.ReasonList || got.Detail != "ids" {
		t.Errorf("customers_by_ids: %+v", got)
	}
	if got := byName["customers_export"]; got.Reason != adapter.ReasonNeedsConfirmation {
		t.Errorf("customers_export: %+v", got)
	}
	if got := byName["customers_create"]; got.Reason != adapter.ReasonNotLive {
		t.Errorf("customers_create: %+v", got)
	}
	text := r.String()
	for _, want := range []string{"template  app://customers_show/{id}", "no template: an argument is a list (ids) [list]"} {
		if !strings.Contains(text, want) {
			t.Errorf("report text lacks %q:\n%s", want, text)
		}
	}
}

func TestInspectContextAppliesGrants(t *testing.T) {
	_, a := newServer(t, adapter.WithGrant(func(ctx context.Context, name string) bool {
		return name != "customers_index"
	}))
	for _, c := range a.InspectContext(context.Background()).Commands {
		switch c.Name {
		case "customers_index":
			if c.Template != "" || c.Resource != "" || c.Reason != adapter.ReasonNotGranted {
				t.Errorf("ungranted customers_index: %+v", c)
			}
		case "customers_show":
			if c.Template == "" {
				t.Errorf("granted customers_show lost its template: %+v", c)
			}
		}
	}
	if got := a.Inspect().Commands; !slices.ContainsFunc(got, func(c adapter.CommandReport) bool {
		return c.Name == "customers_index" && c.Template != ""
	}) {
		t.Error("Inspect without a session must not apply grants")
	}
}

func TestToolCallChecksEnumsLikeARead(t *testing.T) {
	type sortArgs struct {
		Sort string `json:"sort,omitempty" jsonschema:"enum=name,enum=created_at"`
		Dir  string `json:"direction" jsonschema:"enum=asc,enum=desc"`
	}
	srv := server.NewMCPServer("t", "1")
	a := adapter.Wrap(srv)
	adapter.Live(a, "sorted", "", func(context.Context, sortArgs) (string, error) { return "ok", nil })
	c := connect(t, srv)
	call := mcp.CallToolRequest{}
	call.Params.Name = "sorted"
	call.Params.Arguments = map[string]any{"sort": "email", "direction": "up"}
	res, err := c.CallTool(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(mcp.TextContent).Text
	want := `invalid arguments: direction: must be one of "asc", "desc"; sort: must be one of "name", "created_at"`
	if !res.IsError || text != want {
		t.Errorf("got %q (isError %v), want %q", text, res.IsError, want)
	}
	call.Params.Arguments = map[string]any{"sort": "name", "direction": "asc"}
	if res, err := c.CallTool(context.Background(), call); err != nil || res.IsError {
		t.Errorf("valid constants refused: %v %+v", err, res)
	}
}

func TestGrantHidesPlainResources(t *testing.T) {
	srv, _ := newServer(t, adapter.WithGrant(func(_ context.Context, name string) bool {
		return name != "customers_index"
	}))
	c := connect(t, srv)
	resources, err := c.ListResources(context.Background(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Equal(uris, []string{"app://user_resource"}) {
		t.Errorf("resources = %v, want only the user's: customers_index is not granted", uris)
	}
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "app://customers_index"
	if _, err := c.ReadResource(context.Background(), req); err == nil {
		t.Error("reading the plain resource of an ungranted command succeeded")
	}
}

func TestValidationErrorCollects(t *testing.T) {
	var errs adapter.ValidationError
	if errs.Err() != nil {
		t.Fatal("an empty ValidationError must be a nil error")
	}
	errs.Add("page", "must be at least 1")
	errs.Add("", "give a name or an email")
	err := errs.Err()
	if err == nil || err.Error() != "invalid arguments: page: must be at least 1; give a name or an email" {
		t.Errorf("Err() = %v", err)
	}
}

func TestCallAndInspectContext(t *testing.T) {
	_, a := newServer(t, adapter.WithGrant(func(_ context.Context, name string) bool {
		return name != "customers_create"
	}))
	if _, err := a.Call(context.Background(), "nope", nil); !errors.Is(err, adapter.ErrUnknownCommand) {
		t.Errorf("Call of an unknown command: %v, want ErrUnknownCommand", err)
	}
	for _, c := range a.InspectContext(context.Background()).Commands {
		if c.Name == "customers_create" && (c.Tool != "" || c.Reason != adapter.ReasonNotGranted) {
			t.Errorf("an ungranted command without a template: %+v, want no tool and not granted", c)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "burst") {
			t.Errorf("a rate limit without a burst: recovered %v, want a panic naming the burst", r)
		}
	}()
	adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithRateLimit(10, 0))
}

func TestWrapAfterServingPanics(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	connect(t, srv) // a client session: the server serves
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "before it serves") {
			t.Errorf("recovered %v, want a panic saying to wrap before serving", r)
		}
	}()
	adapter.Wrap(srv)
}

// panickyObserver panics in the method named by where.
type panickyObserver struct{ where string }

func (p panickyObserver) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	if p.where == "Observe" {
		panic("Observe")
	}
	if p.where == "nil" {
		return nil, nil
	}
	return ctx, p
}

func (p panickyObserver) Phase(string, time.Time, time.Time) {
	if p.where == "Phase" {
		panic("Phase")
	}
}

func (p panickyObserver) End(adapter.Outcome, error) {
	if p.where == "End" {
		panic("End")
	}
}

// An Observer that panics, or returns no Observation, costs what it
// observes nothing: reads, tools/calls, re-runs (on the adapter's workers,
// where a panic ended the process) and notifications go on, and the panic
// is logged.
func TestObserverPanicsCostNothing(t *testing.T) {
	for _, where := range []string{"Observe", "Phase", "End", "nil"} {
		t.Run(where, func(t *testing.T) {
			var logs syncBuffer
			a := adapter.Wrap(server.NewMCPServer("t", "1"),
				adapter.WithObserver(panickyObserver{where}),
				adapter.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			version := 0
			var mu sync.Mutex
			adapter.Live(a, "item_show", "", func(ctx context.Context, args struct {
				ID int `json:"id"`
			}) (map[string]int, error) {
				adapter.Reads(ctx, "items")
				mu.Lock()
				defer mu.Unlock()
				return map[string]int{"id": args.ID, "version": version}, nil
			})
			c := adaptertest.New(t, a)
			if _, err := c.Read("app://item_show/1"); err != nil {
				t.Fatalf("read: %v", err)
			}
			if res, err := c.CallTool("item_show", map[string]any{"id": 1}); err != nil || res.IsError {
				t.Fatalf("tools/call: %v %v", err, res)
			}
			sub, err := c.Listen("app://item_show/1")
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			version++
			mu.Unlock()
			a.Changed("items")
			c.WaitIdle()
			if got := sub.Take(); len(got) != 1 {
				t.Errorf("after a change, heard %v; want one notification", got)
			}
			if where != "nil" && !strings.Contains(logs.String(), "Observer panicked") {
				t.Errorf("the panic was not logged: %s", logs.String())
			}
		})
	}
}

// edgeClients are clients of a, serving srv, through each of its edges on
// era: Streamable HTTP (HTTPHandler), stdio (ServeStdio), and adaptertest
// (Adapter.HandleMessage).
func edgeClients(t *testing.T, srv *server.MCPServer, a *adapter.Adapter, era edgeEra) (*edgeHTTPClient, *edgeStdioClient, *adaptertest.Client) {
	t.Helper()
	httpc := newEdgeHTTPClient(t, edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv))), era)
	stdio := newEdgeStdioClient(t, era, edgeServeStdio(a))
	var opts []adaptertest.Option
	if !era.modern() {
		opts = append(opts, adaptertest.Legacy())
	}
	return httpc, stdio, adaptertest.New(t, a, opts...)
}

// Every edge answers a read with the same error object, byte for byte:
// Streamable HTTP, stdio, and adaptertest (Adapter.HandleMessage).
func TestEdgesAnswerAlike(t *testing.T) {
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			srv, a := edgeApp(t)
			httpc, stdio, inproc := edgeClients(t, srv, a, era)

			for _, tc := range edgeCases {
				if tc.check == nil {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					h, err := json.Marshal(httpc.read(tc.uri).resp.Error)
					if err != nil {
						t.Fatal(err)
					}
					s, err := json.Marshal(stdio.read(tc.uri).Error)
					if err != nil {
						t.Fatal(err)
					}
					_, werr := inproc.ReadRaw(tc.uri)
					i, err := json.Marshal(werr)
					if err != nil {
						t.Fatal(err)
					}
					if string(h) != string(s) || string(h) != string(i) {
						t.Errorf("the edges disagree:\nHTTP        %s\nstdio       %s\nadaptertest %s", h, s, i)
					}
					var e edgeWireError
					if err := json.Unmarshal(i, &e); err != nil {
						t.Fatal(err)
					}
					tc.check(t, era, &e)
				})
			}
		})
	}
}
