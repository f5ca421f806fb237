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

// memoryBus stands in for what connects the instances of a server: the
// database they share, for pgfeed. Each instance has a feed on it.
type memoryBus struct {
	mu    sync.Mutex
	feeds []*memoryFeed
}

// memoryFeed is one instance's adapter.ChangeFeed on the bus: what the
// instance publishes reaches every other instance's sink.
type memoryFeed struct {
	bus  *memoryBus
	sink adapter.ChangeSink
}

func (b *memoryBus) newFeed() *memoryFeed {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &memoryFeed{bus: b}
	b.feeds = append(b.feeds, f)
	return f
}

// Attach is called by adapter.Wrap with the sink of its instance.
func (f *memoryFeed) Attach(sink adapter.ChangeSink) {
	f.bus.mu.Lock()
	defer f.bus.mu.Unlock()
	f.sink = sink
}

// Publish is called by the adapter, from a goroutine of its own, with the
// keys its instance's writes changed.
func (f *memoryFeed) Publish(ctx context.Context, keys []string) error {
	fmt.Println("published:", keys)
	f.bus.mu.Lock()
	var others []adapter.ChangeSink
	for _, o := range f.bus.feeds {
		if o != f && o.sink != nil {
			others = append(others, o.sink)
		}
	}
	f.bus.mu.Unlock()
	for _, sink := range others {
		sink.Changed(keys...) // the other instance's live queries re-run
	}
	return nil
}

// Two instances of one server share a database and a change feed. An agent
// watches customer 12 on instance B; a rename through instance A reaches
// it: A's adapter publishes the key its write changed, and B's re-runs the
// query and notifies.
func ExampleWithChangeFeed() {
	type ShowArgs struct {
		ID int64 `json:"id"`
	}
	type RenameArgs struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	var mu sync.Mutex // the shared database: customer names by id
	names := map[int64]string{12: "Ada Lovelace"}

	bus := &memoryBus{}
	instance := func() (*server.MCPServer, *adapter.Adapter) {
		srv := server.NewMCPServer("shop", "1.0.0")
		a := adapter.Wrap(srv, adapter.WithChangeFeed(bus.newFeed()))
		adapter.Live(a, "customers_show", "One customer.",
			func(ctx context.Context, args ShowArgs) (string, error) {
				adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
				mu.Lock()
				defer mu.Unlock()
				return names[args.ID], nil
			})
		adapter.Command(a, "customers_rename", "Renames a customer.",
			func(ctx context.Context, args RenameArgs) (string, error) {
				mu.Lock()
				names[args.ID] = args.Name
				mu.Unlock()
				a.Changed(fmt.Sprintf("customers/%d", args.ID)) // here, and published
				return args.Name, nil
			})
		return srv, a
	}
	_, a := instance()
	srvB, b := instance()

	// An agent, in process, listens to customer 12 on instance B.
	ctx := context.Background()
	c, _ := client.NewInProcessClient(srvB)
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
	stop, _ := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"app://customers_show/12"}}, nil)
	defer stop()
	<-acknowledged

	// Another agent renames her through instance A.
	_, _ = a.Call(ctx, "customers_rename", RenameArgs{ID: 12, Name: "Ada King"})
	_ = a.WaitIdle(ctx) // A has published
	_ = b.WaitIdle(ctx) // B has re-run its query
	fmt.Println("heard on B:", <-heard)
	// Output:
	// published: [customers/12]
	// heard on B: app://customers_show/12
}
