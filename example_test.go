package adapter_test

import (
	"context"
	"errors"
	"fmt"

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
