package adapter_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

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
