package adapter_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// A live command with a batch form. Agents watch three customers; a change
// to the customers table re-runs all three subscriptions, and the registry
// asks for them in one call of the batch form (in a real store, one query
// with WHERE id IN (...)) instead of three of the command. Each subscriber
// still hears only of its own customer, and only when it changed.
func ExampleWithBatch() {
	db := &watchDB{names: map[int64]string{1: "Ada Lovelace", 2: "Alan Turing", 3: "Grace Hopper"}}
	show := func(ctx context.Context, args ShowArgs) (Customer, error) {
		adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
		return db.customer(ctx, args.ID)
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
			c, err := db.customer(ctx, a.ID)
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

	_, _ = db.rename(ctx, 1, "Ada King")
	_, _ = db.rename(ctx, 3, "Grace Brewster Hopper")
	a.Changed("customers")
	_ = a.WaitIdle(ctx)
	got := []string{<-heard, <-heard}
	slices.Sort(got)
	fmt.Println("heard:", got)
	// Output:
	// one query: WHERE id IN [1 2 3]
	// heard: [app://customers_show/1 app://customers_show/3]
}
