package adapter

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/mark3labs/mcp-go/server"

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

// payloadResult is a result that points at memory of its own, so that a
// test can tell whether anything keeps it alive.
type payloadResult struct {
	Version int        `json:"version"`
	Data    *[64]int64 `json:"data"`
}

// A re-run's result goes to the worker's slot when no middleware of the
// user's sees it (resultSlot); once digested, nothing of it stays there.
func TestRerunResultSlotKeepsNothing(t *testing.T) {
	var (
		version atomic.Int64
		mu      sync.Mutex
		last    weak.Pointer[[64]int64]
	)
	a := Wrap(server.NewMCPServer("t", "1"))
	Live(a, "payload", "", func(ctx context.Context, args kArgs) (payloadResult, error) {
		Reads(ctx, "k")
		data := new([64]int64)
		data[0] = version.Load()
		mu.Lock()
		last = weak.Make(data)
		mu.Unlock()
		return payloadResult{Version: int(data[0]), Data: data}, nil
	})
	f := newFakeClient(t, a, "s1", 64)
	if err := f.subscribe("app://payload/x"); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}
	for range 3 {
		version.Add(1)
		a.Changed("k")
		waitIdle(t, a)
	}
	if got := a.LiveStats().Reruns; got != 3 {
		t.Fatalf("%d re-runs, want 3", got)
	}
	runtime.GC()
	mu.Lock()
	defer mu.Unlock()
	if last.Value() != nil {
		t.Fatal("the last re-run's result is still reachable after the registry went idle")
	}
}

// Middleware of the user's sees a Live re-run's result as the command
// returned it, a value of its result type, never the slot it would go to
// without middleware.
func TestRerunResultSeenByMiddleware(t *testing.T) {
	seen := make(chan any, 8)
	peek := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			res, err := next(ctx, call)
			if call.Origin == middleware.Live {
				seen <- res
			}
			return res, err
		}
	}
	var version atomic.Int64
	a := Wrap(server.NewMCPServer("t", "1"), WithMiddleware(peek))
	Live(a, "payload", "", func(ctx context.Context, args kArgs) (payloadResult, error) {
		Reads(ctx, "k")
		return payloadResult{Version: int(version.Load())}, nil
	})
	f := newFakeClient(t, a, "s1", 64)
	if err := f.subscribe("app://payload/x"); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}
	version.Add(1)
	a.Changed("k")
	waitIdle(t, a)
	select {
	case res := <-seen:
		if got, ok := res.(payloadResult); !ok || got.Version != 1 {
			t.Fatalf("the middleware saw %#v, want payloadResult{Version: 1}", res)
		}
	default:
		t.Fatal("the middleware saw no re-run")
	}
}
