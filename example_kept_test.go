package adapter_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// A subscriber re-reads the URI its notification names. The re-run that
// caused the notification has just computed that result, and the live
// query keeps it: the re-reads are answered from it, and the command runs
// once per change, not once per reader. CommandRuns says what the
// database paid, by cause.
func ExampleWithKeptResults() {
	type ShowArgs struct {
		ID int64 `json:"id"`
	}
	var name atomic.Value // the database: customer 12's name
	name.Store("Ada Lovelace")
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv, adapter.WithKeptResults(16<<20, 1<<20)) // 16 MiB in all, 1 MiB each
	adapter.Live(a, "customers_show", "One customer.",
		func(ctx context.Context, args ShowArgs) (string, error) {
			adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
			return name.Load().(string), nil
		})

	// An agent listens to customer 12.
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
	stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"app://customers_show/12"}}, nil)
	defer stop()
	<-acknowledged

	// A write, then three reads of what it changed.
	name.Store("Ada King")
	a.Changed("customers/12")
	_ = a.WaitIdle(ctx)
	for range 3 {
		res, _ := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "app://customers_show/12"}})
		text, _ := mcp.AsTextResourceContents(res.Contents[0])
		fmt.Println(text.Text)
	}
	runs := a.CommandRuns()[0]
	fmt.Printf("runs: subscribe %d, rerun %d, read %d; reads answered from the kept result: %d\n",
		runs.Subscribe, runs.Rerun, runs.Read, a.LiveStats().KeptAnswers)
	// Output:
	// "Ada King"
	// "Ada King"
	// "Ada King"
	// runs: subscribe 1, rerun 1, read 0; reads answered from the kept result: 3
}
