package adapter_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// watchDB stands in for your store: customer names by id, read and written
// with the request's context, as a database is.
type watchDB struct {
	mu    sync.Mutex
	names map[int64]string
}

type ShowArgs struct {
	ID int64 `json:"id"`
}

type RenameArgs struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type Customer struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func (db *watchDB) customer(_ context.Context, id int64) (Customer, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	name, ok := db.names[id]
	if !ok {
		return Customer{}, adapter.ErrNotFound
	}
	return Customer{ID: id, Name: name}, nil
}

func (db *watchDB) rename(_ context.Context, id int64, name string) (Customer, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.names[id]; !ok {
		return Customer{}, adapter.ErrNotFound
	}
	db.names[id] = name
	return Customer{ID: id, Name: name}, nil
}

// An agent watches customer 12 over subscriptions/listen. Renaming
// customer 12 notifies it; renaming customer 13 re-runs nothing, and
// renaming 12 to the name it has re-runs the query and notifies no one.
// (docs/watching.md shows the two commands; this file is the whole
// program.)
func ExampleReads_watching() {
	db := &watchDB{names: map[int64]string{12: "Ada Lovelace", 13: "Alan Turing"}}
	srv := server.NewMCPServer("shop", "1.0.0")

	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_show", "One customer.",
		func(ctx context.Context, args ShowArgs) (Customer, error) {
			adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
			return db.customer(ctx, args.ID)
		})
	adapter.Command(a, "customers_rename", "Renames a customer.",
		func(ctx context.Context, args RenameArgs) (Customer, error) {
			c, err := db.rename(ctx, args.ID, args.Name)
			if err != nil {
				return Customer{}, err
			}
			a.Changed(fmt.Sprintf("customers/%d", args.ID)) // after the commit
			return c, nil
		})

	// An agent, in process, listens to customers 12 and 99.
	ctx := context.Background()
	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	heard := make(chan string, 10)
	acknowledged := make(chan []string, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationResourceUpdated:
			heard <- fmt.Sprint(n.Params.AdditionalFields["uri"])
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			f, _ := n.Params.AdditionalFields["notifications"].(mcp.SubscriptionFilter)
			acknowledged <- f.ResourceSubscriptions
		}
	})
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{
		ResourceSubscriptions: []string{"app://customers_show/12", "app://customers_show/99"},
	}, nil)
	defer stop()
	fmt.Println("acknowledged:", <-acknowledged) // customer 99 does not exist yet

	rename := func(id int64, name string) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "customers_rename"
		req.Params.Arguments = map[string]any{"id": id, "name": name}
		_, _ = c.CallTool(ctx, req)
		_ = a.WaitIdle(ctx) // the re-runs are done
	}
	rename(12, "Ada King")
	fmt.Println("heard:", <-heard)
	rename(13, "Alan M. Turing") // no live query read customer 13
	rename(12, "Ada King")       // re-runs, and the result is the same
	fmt.Println("notifications sent:", a.LiveStats().Notified)
	// Output:
	// acknowledged: [app://customers_show/12 app://customers_show/99]
	// heard: app://customers_show/12
	// notifications sent: 1
}
