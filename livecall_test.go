package adapter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcplive/adapter/middleware"
)

// A re-run's middleware.Call is reused from run to run only when no
// middleware of the user's sees it (job.call). A middleware that keeps the
// Calls of re-runs finds each as it was when its run passed, however many
// runs, of other queries, came after.
func TestRerunCallKeptByMiddleware(t *testing.T) {
	type kept struct {
		p    *middleware.Call
		seen middleware.Call
	}
	var (
		mu   sync.Mutex
		keep []kept
	)
	keeper := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			if call.Origin == middleware.Live {
				mu.Lock()
				keep = append(keep, kept{call, *call})
				mu.Unlock()
			}
			return next(ctx, call)
		}
	}
	const items = 3 * maxChunk // enough for workers to take chunks
	st := newItemStore(items)
	a := newLiveServer(t, st, WithMiddleware(keeper))
	f := newFakeClient(t, a, "s1", 4*items)
	for id := 1; id <= items; id++ {
		if err := f.subscribe(fmt.Sprintf("app://items_show/%d", id)); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		for id := 1; id <= items; id++ {
			st.set(id, fmt.Sprintf("v%d", round+2))
		}
		a.Changed("items")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := a.WaitIdle(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keep) != 3*items {
		t.Fatalf("the middleware saw %d re-runs, want %d", len(keep), 3*items)
	}
	seen := make(map[*middleware.Call]bool)
	for i, k := range keep {
		if seen[k.p] {
			t.Fatalf("re-run %d was given the Call of an earlier re-run", i)
		}
		seen[k.p] = true
		if k.p.Command != k.seen.Command || k.p.Args != k.seen.Args || string(k.p.RawArgs) != string(k.seen.RawArgs) {
			t.Fatalf("re-run %d: kept Call changed after its run: now %s %v, was %s %v",
				i, k.p.Command, k.p.Args, k.seen.Command, k.seen.Args)
		}
	}
}
