package adapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/middleware"
)

// Wrap attaches the adapter to a server that already exists; everything the
// server had stays as it was.
func ExampleWrap() {
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv, adapter.WithScheme("shop"))

	type showArgs struct {
		ID int64 `json:"id"`
	}
	adapter.Live(a, "orders_show", "One order.", func(ctx context.Context, args showArgs) (map[string]any, error) {
		return map[string]any{"id": args.ID}, nil
	})
	fmt.Println(a.Inspect().Commands[0].Template)
	// Output: shop://orders_show/{id}
}

// A live command is a tool and, when its arguments are scalars, a resource
// template: required arguments become path segments, optional ones the
// query, each in name order.
func ExampleLive() {
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))

	type betweenArgs struct {
		From   string `json:"from"`
		To     string `json:"to"`
		Status string `json:"status,omitempty" jsonschema:"enum=open,enum=paid,enum=cancelled"`
	}
	adapter.Live(a, "orders_between", "Orders placed between two dates.",
		func(ctx context.Context, args betweenArgs) ([]string, error) {
			adapter.Reads(ctx, "orders") // re-run subscribers when orders change
			return []string{}, nil
		})
	fmt.Println(a.Inspect().Commands[0].Template)
	// Output: app://orders_between/{from}/{to}{?status}
}

// A command may write: it is a tool only. After its write commits it tells
// the adapter what changed, so that live queries that read it re-run.
func ExampleCommand() {
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))

	type createArgs struct {
		Name string `json:"name"`
	}
	adapter.Command(a, "customers_create", "Create a customer.",
		func(ctx context.Context, args createArgs) (map[string]string, error) {
			// ... INSERT and COMMIT ...
			a.Changed("customers")
			return map[string]string{"name": args.Name}, nil
		})
	c := a.Inspect().Commands[0]
	fmt.Println(c.Tool, "-", c.Reason, "-", c.Reason.Description())
	// Output: customers_create - not_live - not live: a command that may write is a tool only
}

// Inspect tells, per command, its tool, its plain resource, its template,
// or why it has none.
func ExampleAdapter_Inspect() {
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))

	type indexArgs struct {
		Search string `json:"search,omitempty"`
		Page   int    `json:"page,omitempty"`
	}
	type byIDsArgs struct {
		IDs []int64 `json:"ids"`
	}
	adapter.Live(a, "customers_index", "A page of customers.",
		func(context.Context, indexArgs) ([]string, error) { return nil, nil })
	adapter.Live(a, "customers_by_ids", "Several customers.",
		func(context.Context, byIDsArgs) ([]string, error) { return nil, nil })
	fmt.Print(a.Inspect())
	// Output:
	// customers_by_ids (live)
	//   tool      customers_by_ids
	//   no template: an argument is a list (ids) [list]
	//
	// customers_index (live)
	//   tool      customers_index
	//   resource  app://customers_index
	//   template  app://customers_index{?page,search}
}

// A grant function decides per request which commands the agent may use;
// here, read-only ones only. Refused commands look as if they did not exist.
func ExampleWithGrant() {
	readOnly := map[string]bool{"customers_show": true}
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"),
		adapter.WithGrant(func(ctx context.Context, command string) bool {
			return readOnly[command]
		}))
	type showArgs struct {
		ID int64 `json:"id"`
	}
	type createArgs struct {
		Name string `json:"name"`
	}
	adapter.Live(a, "customers_show", "One customer.",
		func(context.Context, showArgs) (string, error) { return "Ada", nil })
	adapter.Command(a, "customers_create", "Create a customer.",
		func(context.Context, createArgs) (string, error) { return "", nil })
	for _, c := range a.InspectContext(context.Background()).Commands {
		fmt.Printf("%s: %q %s\n", c.Name, c.Template, c.Why)
	}
	// Output:
	// customers_create: "" not granted to this session
	// customers_show: "app://customers_show/{id}"
}

// A middleware sees every invocation: the command, its decoded arguments
// and who asked. This one refuses agents a command outside office hours.
func ExampleWithMiddleware() {
	closed := true
	officeHours := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			if call.Command == "customers_export" && call.Origin == middleware.Agent && closed {
				return nil, errors.New("exports run in office hours only")
			}
			return next(ctx, call)
		}
	}
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"), adapter.WithMiddleware(officeHours))
	adapter.Live(a, "customers_export", "Everything.",
		func(context.Context, struct{}) (string, error) { return "all of it", nil },
		adapter.NeedsConfirmation())

	// The application's own calls (origin App) pass.
	res, err := a.Call(context.Background(), "customers_export", struct{}{})
	fmt.Println(res, err)
	// Output: all of it <nil>
}

// A live command with a batch form. Agents watch three customers; a change
// to the customers table re-runs all three subscriptions, and the registry
// asks for them in one call of the batch form (in a real store, one query
// with WHERE id IN (...)) instead of three of the command. Each subscriber
// still hears only of its own customer, and only when it changed.
func ExampleWithBatch() {
	type ShowArgs struct {
		ID int64 `json:"id"`
	}
	type Customer struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	var mu sync.Mutex // the database: customer names by id
	names := map[int64]string{1: "Ada Lovelace", 2: "Alan Turing", 3: "Grace Hopper"}
	customer := func(id int64) (Customer, error) {
		mu.Lock()
		defer mu.Unlock()
		name, ok := names[id]
		if !ok {
			return Customer{}, adapter.ErrNotFound
		}
		return Customer{ID: id, Name: name}, nil
	}
	show := func(ctx context.Context, args ShowArgs) (Customer, error) {
		adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
		return customer(args.ID)
	}
	showMany := func(ctx context.Context, args []ShowArgs) ([]Customer, error) {
		ids := make([]int64, len(args))
		for i, a := range args {
			ids[i] = a.ID
			adapter.ReadsAt(ctx, i, fmt.Sprintf("customers/%d", a.ID)) // what set i read
		}
		fmt.Println("one query: WHERE id IN", slices.Sorted(slices.Values(ids)))
		results := make([]Customer, len(args))
		var errs adapter.BatchErrors // the sets that failed, when some do
		for i, a := range args {
			c, err := customer(a.ID)
			if err != nil {
				if errs == nil {
					errs = make(adapter.BatchErrors, len(args))
				}
				errs[i] = err
				continue
			}
			results[i] = c
		}
		if errs != nil {
			return results, errs
		}
		return results, nil
	}
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_show", "One customer.", show, adapter.WithBatch(showMany))

	ctx := context.Background()
	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	heard := make(chan string, 10)
	acknowledged := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationResourceUpdated:
			heard <- fmt.Sprint(n.Params.AdditionalFields["uri"])
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			acknowledged <- struct{}{}
		}
	})
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{
		"app://customers_show/1", "app://customers_show/2", "app://customers_show/3",
	}}, nil)
	defer stop()
	<-acknowledged // each subscription's first run is the command's own

	mu.Lock()
	names[1], names[3] = "Ada King", "Grace Brewster Hopper"
	mu.Unlock()
	a.Changed("customers")
	_ = a.WaitIdle(ctx)
	got := []string{<-heard, <-heard}
	slices.Sort(got)
	fmt.Println("heard:", got)
	// Output:
	// one query: WHERE id IN [1 2 3]
	// heard: [app://customers_show/1 app://customers_show/3]
}

// Changed names what a write changed, after it committed: a row
// ("customers/12") re-runs the live queries that read that row or the
// whole table; a table ("customers") re-runs every query that read any of
// it. Each query re-runs once however many keys reach it, and its
// subscribers hear of it only when its result differs.
func ExampleAdapter_Changed() {
	type ShowArgs struct {
		ID int64 `json:"id"`
	}
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_show", "One customer.",
		func(ctx context.Context, args ShowArgs) (string, error) {
			adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID)) // one row
			return fmt.Sprintf("customer %d", args.ID), nil
		})

	// An agent, in process, listens to customers 12 and 13.
	ctx := context.Background()
	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	acknowledged := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
			acknowledged <- struct{}{}
		}
	})
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{
		ResourceSubscriptions: []string{"app://customers_show/12", "app://customers_show/13"},
	}, nil)
	defer stop()
	<-acknowledged

	for _, keys := range [][]string{
		{"customers/12"},                 // the row one query read
		{"customers/14"},                 // a row no query read
		{"customers"},                    // the table: every query that read a row of it
		{"customers/12", "customers/13"}, // two rows: one re-run each
		{"orders"},                       // another table
	} {
		before := a.LiveStats().Reruns
		a.Changed(keys...)
		_ = a.WaitIdle(ctx)
		fmt.Printf("Changed(%q): %d re-runs\n", keys, a.LiveStats().Reruns-before)
	}
	fmt.Println("notifications sent:", a.LiveStats().Notified) // no result changed
	// Output:
	// Changed(["customers/12"]): 1 re-runs
	// Changed(["customers/14"]): 0 re-runs
	// Changed(["customers"]): 2 re-runs
	// Changed(["customers/12" "customers/13"]): 2 re-runs
	// Changed(["orders"]): 0 re-runs
	// notifications sent: 0
}

// A scope keeps each user's live queries apart. my_orders answers the
// caller's own orders: with WithScope naming the user, Ada's and Kurt's
// subscriptions to the same URI are two queries, each re-run with its own
// user's request values, and a new order of Ada's notifies Ada alone.
func ExampleWithScope() {
	type userKey struct{} // put in a request's context by your authentication
	type MyOrdersArgs struct{}
	var mu sync.Mutex // the database: order amounts by user
	orders := map[string][]int{"ada": {1250}, "kurt": {990}}

	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv, adapter.WithScope(func(ctx context.Context) (string, error) {
		user, ok := ctx.Value(userKey{}).(string)
		if !ok {
			return "", errors.New("sign in first")
		}
		return user, nil
	}))
	adapter.Live(a, "my_orders", "Your own orders.",
		func(ctx context.Context, _ MyOrdersArgs) ([]int, error) {
			adapter.Reads(ctx, "orders")
			user, _ := ctx.Value(userKey{}).(string) // a re-run finds it too
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(orders[user]), nil
		})

	// Each user's agent, in process, listens to app://my_orders with its
	// user in the request's context.
	heard := make(chan string, 10)
	watch := func(user string) func() {
		ctx := context.WithValue(context.Background(), userKey{}, user)
		c, _ := client.NewInProcessClient(srv)
		acknowledged := make(chan struct{}, 1)
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			switch n.Method {
			case mcp.MethodNotificationResourceUpdated:
				heard <- user + " heard " + fmt.Sprint(n.Params.AdditionalFields["uri"])
			case mcp.MethodNotificationSubscriptionsAcknowledged:
				acknowledged <- struct{}{}
			}
		})
		_ = c.Start(ctx)
		_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
		stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"app://my_orders"}}, nil)
		<-acknowledged
		return func() { stop(); c.Close() }
	}
	defer watch("ada")()
	defer watch("kurt")()
	fmt.Println("live queries:", a.LiveStats().Queries) // one per user

	mu.Lock()
	orders["ada"] = append(orders["ada"], 4200) // a new order of Ada's
	mu.Unlock()
	a.Changed("orders") // both users' queries re-run; only Ada's result differs
	_ = a.WaitIdle(context.Background())
	fmt.Println(<-heard)
	fmt.Println("notifications sent:", a.LiveStats().Notified)
	// Output:
	// live queries: 2
	// ada heard app://my_orders
	// notifications sent: 1
}

// Pacing: the first change to a watched page is announced at once; the
// next, which comes within the interval, once the interval has passed.
func ExampleWithNotifyInterval() {
	type IndexArgs struct {
		Search string `json:"search,omitempty"`
	}
	var mu sync.Mutex
	names := []string{"Ada Lovelace", "Alan Turing"}
	index := func(ctx context.Context, args IndexArgs) ([]string, error) {
		adapter.Reads(ctx, "customers")
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(names), nil
	}
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_index", "A page of customers.", index,
		adapter.WithNotifyInterval(time.Second))

	ctx := context.Background()
	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	heard := make(chan time.Time, 10)
	acknowledged := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationResourceUpdated:
			heard <- time.Now()
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			acknowledged <- struct{}{}
		}
	})
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"app://customers_index"}}, nil)
	defer stop()
	<-acknowledged

	rename := func(i int, name string) {
		mu.Lock()
		names[i] = name
		mu.Unlock()
		a.Changed("customers")
	}
	rename(0, "Ada King")
	first := <-heard
	fmt.Println("the first change: heard at once")
	rename(1, "Alan M. Turing") // within the second: delayed, not dropped
	second := <-heard
	fmt.Println("the second: heard when the second had passed:", second.Sub(first) > time.Second/2)
	// Output:
	// the first change: heard at once
	// the second: heard when the second had passed: true
}

// Cache hints: on 2026-07-28 a read of countries_list says that any client,
// or a cache shared between users, may keep it for an hour.
func ExampleWithCacheTTL() {
	type noArgs struct{}
	listCountries := func(context.Context, noArgs) ([]string, error) {
		return []string{"France", "Japan"}, nil
	}
	srv := server.NewMCPServer("atlas", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "countries_list", "Every country.", listCountries,
		adapter.WithCacheTTL(time.Hour), adapter.WithPublicCache())

	ctx := context.Background()
	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "app://countries_list"
	res, err := c.ReadResource(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	ttl, _ := res.TTL()
	fmt.Println("ttlMs:", ttl, "cacheScope:", res.CacheScope)
	// Output: ttlMs: 3600000 cacheScope: public
}

// A tools/call of a live command links, after its JSON text, the URI that
// reads and watches the same result.
func ExampleLive_resourceLink() {
	type showArgs struct {
		ID int64 `json:"id"`
	}
	type customer struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_show", "One customer.", func(_ context.Context, args showArgs) (customer, error) {
		return customer{ID: args.ID, Name: "Ada Lovelace"}, nil
	})

	ctx := context.Background()
	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	req := mcp.CallToolRequest{}
	req.Params.Name = "customers_show"
	req.Params.Arguments = map[string]any{"id": 12}
	res, _ := c.CallTool(ctx, req)
	for _, content := range res.Content {
		switch content := content.(type) {
		case mcp.TextContent:
			fmt.Println("text:", content.Text)
		case mcp.ResourceLink:
			fmt.Println("resource_link:", content.URI)
		}
	}
	// Output:
	// text: {"id":12,"name":"Ada Lovelace"}
	// resource_link: app://customers_show/12
}

// TestWatchingGuideSnippets keeps docs/watching.md honest: every Go
// fragment in it appears, line for line, in this file or in
// example_watching_test.go. (Whole programs, which
// start with package, are built by TestDocsProgramsBuild.)
func TestWatchingGuideSnippets(t *testing.T) {
	guide, err := os.ReadFile("docs/watching.md")
	if err != nil {
		t.Fatal(err)
	}
	var self []byte
	for _, file := range []string{"example_test.go", "example_watching_test.go"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		self = append(self, b...)
	}
	normalize := func(s string) string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	source := normalize(string(self))
	snippets := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(guide), -1)
	if len(snippets) == 0 {
		t.Fatal("docs/watching.md has no Go snippet")
	}
	for _, m := range snippets {
		if strings.HasPrefix(m[1], "package ") {
			continue
		}
		if !strings.Contains(source, normalize(m[1])) {
			t.Errorf("snippet of docs/watching.md not found in example_test.go or example_watching_test.go:\n%s", m[1])
		}
	}
}

// printObserver prints each operation when it ends, with its phases: an
// Observer as small as one can be. github.com/mcplive/adapter/otel is one
// for production, on OpenTelemetry.
type printObserver struct{}

func (printObserver) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	return ctx, &printed{op: op}
}

type printed struct {
	op     adapter.Op
	phases []string
}

func (p *printed) Phase(name string, start, end time.Time) { p.phases = append(p.phases, name) }

func (p *printed) End(outcome adapter.Outcome, err error) {
	fmt.Printf("%s %s: %s [%s]\n", p.op.Kind, p.op.Command, outcome, strings.Join(p.phases, " "))
}

// An Observer hears of every read of the adapter's URIs, with its phases
// and outcome, and of every tools/call, re-run and batch of notifications.
func ExampleWithObserver() {
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv, adapter.WithObserver(printObserver{}))
	type showArgs struct {
		ID int64 `json:"id" jsonschema:"minimum=1"`
	}
	var name atomic.Value
	name.Store("Ada Lovelace")
	adapter.Live(a, "customers_show", "One customer.", func(ctx context.Context, args showArgs) (string, error) {
		adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
		if args.ID != 12 {
			return "", adapter.ErrNotFound
		}
		return name.Load().(string), nil
	})
	ctx := context.Background()
	for _, uri := range []string{"app://customers_show/12", "app://customers_show/13", "app://customers_show/0", "app://customers_show/x"} {
		a.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`"}}`))
	}
	a.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"customers_show","arguments":{"id":12}}}`))

	// An agent watches customer 12; a write renames it.
	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	acknowledged := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
			acknowledged <- struct{}{}
		}
	})
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"app://customers_show/12"}}, nil)
	defer stop()
	<-acknowledged // the subscription's first run is no re-run
	name.Store("Ada King")
	a.Changed("customers/12")
	_ = a.WaitIdle(ctx) // the Observer has been told of the re-run
	// Output:
	// read customers_show: ok [parse convert validate command]
	// read customers_show: not_found [parse convert validate command]
	// read customers_show: invalid [parse convert validate]
	// read customers_show: invalid [parse convert]
	// call customers_show: ok []
	// notify customers_show: ok []
	// rerun customers_show: changed [command]
}

// DebugHandler is a page of the commands and of the live queries that
// follows the registry as it changes. Serve it where only operators
// reach it: it shows the arguments of every live query.
func ExampleAdapter_DebugHandler() {
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	mux.Handle("GET /debug/live", a.DebugHandler())
	_ = http.ListenAndServe // serve mux on a loopback or operators' address
}

// PageArgs are the arguments of the examples' customers_index: optional
// integers, so they make the query of app://customers_index{?page,per_page}.
type PageArgs struct {
	Page    *int `json:"page,omitempty"`
	PerPage *int `json:"per_page,omitempty"`
}

// Validate names every argument that is wrong.
func (a PageArgs) Validate() error {
	var errs adapter.ValidationError
	if a.Page != nil && *a.Page < 1 {
		errs.Add("page", "must be at least 1")
	}
	if a.PerPage != nil && (*a.PerPage < 1 || *a.PerPage > 100) {
		errs.Add("per_page", "must be between 1 and 100")
	}
	return errs.Err()
}

// exampleAdapter is a server with one live command.
func exampleAdapter() (*server.MCPServer, *adapter.Adapter) {
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_index", "A page of customers.",
		func(_ context.Context, args PageArgs) ([]string, error) {
			return []string{"Ada Lovelace"}, nil
		})
	return srv, a
}

// A request of protocol version 2026-07-28 carries its version and the
// client's capabilities in _meta.
const exampleRead = `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{` +
	`"uri":"app://customers_index?page=0&per_page=500",` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`

// Serve Streamable HTTP through the adapter's edge to answer reads with the
// exact error: -32602 with every failing field in data.errors, and, for
// protocol version 2026-07-28, the HTTP status that goes with it.
func ExampleAdapter_HTTPHandler() {
	srv, a := exampleAdapter()
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	ts := httptest.NewServer(mux) // in production: http.ListenAndServe(addr, mux)
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(exampleRead))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "resources/read")
	req.Header.Set("Mcp-Name", "app://customers_index?page=0&per_page=500")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status)
	fmt.Print(string(body))
	// Output:
	// 400 Bad Request
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid arguments: page: must be at least 1; per_page: must be between 1 and 100","data":{"errors":[{"field":"page","message":"must be at least 1"},{"field":"per_page","message":"must be between 1 and 100"}]}}}
}

// Serve stdio through the adapter's edge; a server process passes os.Stdin,
// os.Stdout and a context that ends on SIGINT or SIGTERM.
func ExampleAdapter_ServeStdio() {
	_, a := exampleAdapter()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- a.ServeStdio(context.Background(), inR, outW) }()

	fmt.Fprintln(inW, strings.Replace(exampleRead, "page=0&per_page=500", "per_page=500", 1))
	line, _ := bufio.NewReader(outR).ReadString('\n')
	fmt.Print(line)

	inW.Close() // end of input: ServeStdio returns
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid arguments: per_page: must be between 1 and 100","data":{"errors":[{"field":"per_page","message":"must be between 1 and 100"}]}}}
}

// HandleMessage is the seam for a transport of your own: it answers one
// message as the adapter's edges do.
func ExampleAdapter_HandleMessage() {
	_, a := exampleAdapter()
	read := func(uri string) {
		msg := strings.Replace(exampleRead, "app://customers_index?page=0&per_page=500", uri, 1)
		resp := a.HandleMessage(context.Background(), json.RawMessage(msg))
		b, _ := json.Marshal(resp)
		var r struct {
			Result *struct {
				Contents []struct{ URI, Text string }
			}
			Error json.RawMessage
		}
		json.Unmarshal(b, &r)
		if r.Result != nil {
			fmt.Println(r.Result.Contents[0].URI, r.Result.Contents[0].Text)
			return
		}
		fmt.Println(string(r.Error))
	}
	read("app://customers_index?per_page=2")
	read("app://customers_index?page=two")
	read("app://customers_index?colour=red")
	read("app://orders_index")
	// Output:
	// app://customers_index?per_page=2 ["Ada Lovelace"]
	// {"code":-32602,"message":"invalid arguments: page: must be an integer","data":{"errors":[{"field":"page","message":"must be an integer"}]}}
	// {"code":-32602,"message":"resource not found: app://customers_index?colour=red: unknown query parameter \"colour\"","data":{"uri":"app://customers_index?colour=red"}}
	// {"code":-32602,"message":"resource not found: app://orders_index","data":{"uri":"app://orders_index"}}
}

// A server process serving Streamable HTTP at addr. (Compiled, not run.)
func ExampleAdapter_HTTPHandler_listen() {
	srv, a := exampleAdapter()
	addr := "127.0.0.1:8080"

	httpSrv := server.NewStreamableHTTPServer(srv) // any options of yours
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.HTTPHandler(httpSrv))
	log.Fatal(http.ListenAndServe(addr, mux))
}

// A server process serving its standard streams until SIGINT or SIGTERM.
// (Compiled, not run.)
func ExampleAdapter_ServeStdio_process() {
	_, a := exampleAdapter()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := a.ServeStdio(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// On a server reached by name from a network (not loopback), list its
// names: a request for any other Host is refused before it reaches mcp-go,
// which stops DNS rebinding, where a page's own name is both its Origin and
// the Host it asks for.
func ExampleWithAllowedHosts() {
	srv, a := exampleAdapter()
	h := a.HTTPHandler(server.NewStreamableHTTPServer(srv), adapter.WithAllowedHosts("mcp.internal"))
	ts := httptest.NewServer(h)
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(exampleRead))
	req.Host = "rebound.example:8080"
	req.Header.Set("Origin", "http://rebound.example:8080")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, strings.TrimSpace(string(body)))
	// Output:
	// 403 {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"host \"rebound.example:8080\" is not allowed"}}
}

// exampleUser is what the authentication of ExampleWithIdentity puts in a
// request's context.
type exampleUser struct{ Subject string }

type exampleUserKey struct{}

// Bind sessions to the users your authentication signs in: the middleware
// in front of HTTPHandler puts the user in the request's context, and
// WithIdentity names them. A session ID that leaks is of no use to anyone
// else: their requests on it are answered as for a session that does not
// exist.
func ExampleWithIdentity() {
	// A typical authentication middleware: it verifies the bearer token
	// (here, a fixed table) and puts the user in the context.
	tokens := map[string]exampleUser{"token-of-ada": {"ada"}, "token-of-kurt": {"kurt"}}
	authenticate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				u, known := tokens[token]
				if !known {
					http.Error(w, "unknown token", http.StatusUnauthorized)
					return
				}
				r = r.WithContext(context.WithValue(r.Context(), exampleUserKey{}, u))
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv, adapter.WithIdentity(func(ctx context.Context) string {
		u, _ := ctx.Value(exampleUserKey{}).(exampleUser)
		return u.Subject // "" for a request without a user
	}))
	mux := http.NewServeMux()
	mux.Handle("/mcp", authenticate(a.HTTPHandler(server.NewStreamableHTTPServer(srv))))
	ts := httptest.NewServer(mux)
	defer ts.Close()

	post := func(token, session, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	opened := post("token-of-ada", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	session := opened.Header.Get("Mcp-Session-Id")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	fmt.Println("Ada on her session:", post("token-of-ada", session, list).Status)
	fmt.Println("Kurt on Ada's session:", post("token-of-kurt", session, list).Status)
	fmt.Println("refused:", a.LiveStats().ForeignSessionRequests)
	// Output:
	// Ada on her session: 200 OK
	// Kurt on Ada's session: 404 Not Found
	// refused: 1
}

// One bounded event store serves mcp-go's streams and the adapter's
// notifications: a 2025-11-25 client whose GET stream broke opens another
// with Last-Event-ID and hears what it missed, mcp-go's own messages (a
// sampling request, a list change) included. Without mcp-go's share,
// HTTPHandler keeps the adapter's notifications in a store of its own.
// (Compiled, not run.)
func ExampleNewEventStore() {
	srv, a := exampleAdapter()
	mux := http.NewServeMux()

	events := adapter.NewEventStore(0)
	httpSrv := server.NewStreamableHTTPServer(srv, server.WithEventStore(events))
	mux.Handle("/mcp", a.HTTPHandler(httpSrv, adapter.WithEventStore(events)))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
