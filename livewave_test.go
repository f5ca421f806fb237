package adapter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// The re-runs of one change run oldest query first, in the order the
// queries were made (liveregistry.go, changeInOrderLocked).
func TestRerunsGoOldestFirst(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	const n = 40
	var mu sync.Mutex
	var ran []int
	a := Wrap(server.NewMCPServer("order", "1"))
	Live(a, "rows_show", "One row.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, fmt.Sprintf("rows/%d", args.ID))
		mu.Lock()
		ran = append(ran, args.ID)
		mu.Unlock()
		return item{ID: args.ID}, nil
	})
	a.live.mu.Lock()
	a.live.maxRuns = 1 // one re-run at a time: the order they were taken in
	a.live.mu.Unlock()
	f := newFakeClient(t, a, "order", 2*n)
	// Made in an order the index's maps would not keep: odd ids, then
	// even ones.
	var uris, want []int
	for id := 1; id <= n; id += 2 {
		uris = append(uris, id)
	}
	for id := 2; id <= n; id += 2 {
		uris = append(uris, id)
	}
	want = slices.Clone(uris)
	for _, id := range uris {
		if acked, _ := f.listen(t, fmt.Sprintf("app://rows_show/%d", id)); len(acked) != 1 {
			t.Fatalf("listen %d: %v", id, acked)
		}
	}
	for round := range 3 {
		mu.Lock()
		ran = nil
		mu.Unlock()
		a.Changed("rows")
		waitIdle(t, a)
		mu.Lock()
		got := slices.Clone(ran)
		mu.Unlock()
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: re-ran %v, want the order the queries were made in, %v", round, got, want)
		}
	}
	f.close()
	waitEmpty(t, a)
}
