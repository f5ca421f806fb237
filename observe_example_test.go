package adapter_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

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
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"), adapter.WithObserver(printObserver{}))
	type showArgs struct {
		ID int64 `json:"id" jsonschema:"minimum=1"`
	}
	adapter.Live(a, "customers_show", "One customer.", func(ctx context.Context, args showArgs) (string, error) {
		if args.ID != 12 {
			return "", adapter.ErrNotFound
		}
		return "Ada Lovelace", nil
	})
	for _, uri := range []string{"app://customers_show/12", "app://customers_show/13", "app://customers_show/0", "app://customers_show/x"} {
		a.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`"}}`))
	}
	// Output:
	// read customers_show: ok [parse convert validate command]
	// read customers_show: not_found [parse convert validate command]
	// read customers_show: invalid [parse convert validate]
	// read customers_show: invalid [parse convert]
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
