package adapter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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

// At the end of a round the worker that ended it hands each session's
// burst over itself (livedeliver.go, handOverNow); a session whose channel
// cannot take the whole burst gets a delivery goroutine for the rest,
// which waits for room, and counts as work for WaitIdle until it is done.
func TestRoundBurstLargerThanTheChannel(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	const subs, room = 30, 10
	st := newItemStore(subs)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "narrow", room)
	var uris []string
	for id := 1; id <= subs; id++ {
		uris = append(uris, fmt.Sprintf("app://items_show/%d", id))
	}
	acked, stop := f.listen(t, uris...)
	if len(acked) != subs {
		t.Fatalf("acknowledged %d of %d", len(acked), subs)
	}
	defer stop()
	if got := f.notes(); len(got) != 0 {
		t.Fatalf("notifications before any change: %v", got)
	}
	for id := 1; id <= subs; id++ {
		st.set(id, "v2")
	}
	a.Changed("items")

	// The channel holds room; the rest waits in a delivery goroutine,
	// which WaitIdle waits for.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.WaitIdle(short); err == nil {
		t.Fatalf("WaitIdle returned with %d notifications the channel had no room for", subs-room)
	}
	heard := map[string]int{}
	deadline := time.After(10 * time.Second)
	for len(heard) < subs {
		select {
		case n := <-f.s.ch:
			if n.Method == mcp.MethodNotificationResourceUpdated {
				uri, _ := n.Params.AdditionalFields["uri"].(string)
				heard[uri]++
			}
		case <-deadline:
			t.Fatalf("heard %d of %d URIs", len(heard), subs)
		}
	}
	waitIdle(t, a)
	for _, uri := range uris {
		if heard[uri] != 1 {
			t.Errorf("%s: %d notifications, want 1", uri, heard[uri])
		}
	}
	if extra := f.notes(); len(extra) != 0 {
		t.Errorf("more notifications than changes: %v", extra)
	}
	if st := a.LiveStats(); st.Notified != subs || st.Pending != 0 {
		t.Errorf("LiveStats: %d notified, %d pending; want %d, 0", st.Notified, st.Pending, subs)
	}
}
