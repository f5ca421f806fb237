package adaptertest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// names is the store of the watch example: customer names by id.
type names struct {
	mu sync.Mutex
	m  map[int64]string
}

func (n *names) get(id int64) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[id]
}

func (n *names) rename(id int64, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.m[id] = name
}

// TestExampleWatch is the watch snippet of docs/testing.md, whole.
func TestExampleWatch(t *testing.T) {
	store := &names{m: map[int64]string{12: "Ada Lovelace", 13: "Alan Turing"}}
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))
	adapter.Live(a, "customers_show", "One customer.",
		func(ctx context.Context, args showArgs) (string, error) {
			adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
			return store.get(args.ID), nil
		})
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			c := adaptertest.New(t, a, era.opts...)
			sub, err := c.Listen("app://customers_show/12")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()

			store.rename(12, "Ada King "+era.name) // commits, then:
			a.Changed("customers/12")
			c.WaitIdle()
			if got := sub.Take(); !slices.Equal(got, []string{"app://customers_show/12"}) {
				t.Errorf("after renaming customer 12: %q, want one notification", got)
			}

			store.rename(13, "Alan M. Turing "+era.name) // another row: not re-run
			a.Changed("customers/13")
			c.WaitIdle()
			if got := sub.Take(); len(got) != 0 {
				t.Errorf("after renaming customer 13: %q, want none", got)
			}
		})
	}
}
