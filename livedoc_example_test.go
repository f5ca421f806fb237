package adapter_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// watchDB is the example's database: customer names by id.
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

// declareWatching is the snippet of docs/watching.md: a live command that reports
// what it reads, and a command that reports what it changed.
func declareWatching(srv *server.MCPServer, db *watchDB) *adapter.Adapter {
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
	return a
}

// An agent watches customer 12 over subscriptions/listen. Renaming
// customer 12 notifies it; renaming customer 13 re-runs nothing, and
// renaming 12 to the name it has re-runs the query and notifies no one.
func ExampleReads_watching() {
	db := &watchDB{names: map[int64]string{12: "Ada Lovelace", 13: "Alan Turing"}}
	srv := server.NewMCPServer("shop", "1.0.0")
	a := declareWatching(srv, db)

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
		_ = a.WaitIdle(ctx)
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

// TestWatchingGuideSnippets keeps docs/watching.md honest: every Go snippet
// in it appears, line for line, in this file.
func TestWatchingGuideSnippets(t *testing.T) {
	guide, err := os.ReadFile("docs/watching.md")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("livedoc_example_test.go")
	if err != nil {
		t.Fatal(err)
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
		if !strings.Contains(source, normalize(m[1])) {
			t.Errorf("snippet of docs/watching.md not found in livedoc_example_test.go:\n%s", m[1])
		}
	}
}
