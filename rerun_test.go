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

// The run queue gives commands turns, the one waiting longest first, a
// chunk of queries a turn, and keeps each command's queries in the order
// they were queued.
func TestRunQueueTurns(t *testing.T) {
	a, b := &command{name: "a"}, &command{name: "b"}
	var rq runQueue
	for i := range 5 {
		rq.push(&query{key: queryKey{cmd: a, args: fmt.Sprint(i)}})
	}
	for i := range 2 {
		rq.push(&query{key: queryKey{cmd: b, args: fmt.Sprint(i)}})
	}
	var got []string
	for {
		qs, batched := rq.take(nil, 2, maxBatch)
		if len(qs) == 0 {
			break
		}
		if batched {
			t.Fatal("a command without a batch form was taken as a batch")
		}
		turn := ""
		for _, q := range qs {
			turn += q.key.cmd.name + q.key.args
		}
		got = append(got, turn)
	}
	want := []string{"a0a1", "b0b1", "a2a3", "a4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("turns %v, want %v", got, want)
	}
	if rq.n != 0 || len(rq.turns) != 0 {
		t.Fatalf("after the last take: %d waiting, turns %v", rq.n, rq.turns)
	}
}

// Once its arrays have grown, the run queue takes and queues without
// allocating: a round of re-runs goes through it a chunk at a time.
func TestRunQueueTakesWithoutAllocating(t *testing.T) {
	cmds := []*command{{name: "a"}, {name: "b"}, {name: "c"}}
	var qs []*query
	for i := range 48 {
		qs = append(qs, &query{key: queryKey{cmd: cmds[i%len(cmds)]}})
	}
	var rq runQueue
	buf := make([]*query, 0, maxChunk)
	round := func() {
		for _, q := range qs {
			rq.push(q)
		}
		for {
			if buf, _ = rq.take(buf[:0], 4, maxBatch); len(buf) == 0 {
				return
			}
		}
	}
	round() // grows the arrays
	if n := testing.AllocsPerRun(20, round); n != 0 {
		t.Fatalf("a round through the run queue allocated %v times", n)
	}
}

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

type passThroughObserver struct{}

func (passThroughObserver) Observe(ctx context.Context, op Op) (context.Context, Observation) {
	return ctx, passThroughObservation{}
}

type passThroughObservation struct{}

func (passThroughObservation) Phase(string, time.Time, time.Time) {}
func (passThroughObservation) End(Outcome, error)                 {}

type slotResultA struct {
	V int      `json:"v"`
	S []string `json:"s"`
}

// Two commands of different result types share the workers' result slots
// (job.resultSlot switches between them), with and without an Observer
// that hands the run's own context on (so the slot is used under it);
// contexts kept by the command are read from goroutines, and passed to
// Adapter.Call, while later runs of their chunk begin (begin writes the
// deadline without the mutex). Every change is noticed and nothing else.
func TestRerunResultSlotAcrossTypesAndKeptContexts(t *testing.T) {
	for _, obs := range []bool{false, true} {
		t.Run(fmt.Sprint("observer=", obs), func(t *testing.T) {
			var opts []Option
			if obs {
				opts = append(opts, WithObserver(passThroughObserver{}))
			}
			a := Wrap(server.NewMCPServer("t", "1"), opts...)
			var va, vb atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			defer func() { close(stop); wg.Wait() }()
			keep := func(ctx context.Context) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						ctx.Deadline()
						_ = ctx.Err()
						_, _ = a.Call(ctx, "rb", kArgs{K: "z"})
						select {
						case <-ctx.Done():
						case <-stop:
						}
						return
					}
				}()
			}
			Live(a, "ra", "", func(ctx context.Context, args kArgs) (slotResultA, error) {
				Reads(ctx, "k")
				keep(ctx)
				v := int(va.Load())
				return slotResultA{V: v, S: []string{args.K, fmt.Sprint(v)}}, nil
			})
			Live(a, "rb", "", func(ctx context.Context, args kArgs) (string, error) {
				Reads(ctx, "k")
				return fmt.Sprint(args.K, vb.Load()), nil
			})
			const n = 30
			c := newFakeClient(t, a, "s1", 10*n)
			for i := range n {
				if err := c.subscribe(fmt.Sprintf("app://ra/%d", i)); err != nil {
					t.Fatal(err)
				}
				if err := c.subscribe(fmt.Sprintf("app://rb/%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			drain := func() int {
				k := 0
				for {
					select {
					case <-c.s.ch:
						k++
					default:
						return k
					}
				}
			}
			drain()
			for round := range 20 {
				want := 0
				switch round % 3 {
				case 0:
					va.Add(1)
					want = n
				case 1:
					vb.Add(1)
					want = n
				}
				before := a.LiveStats().Notified
				a.Changed("k")
				waitIdle(t, a)
				if got := int(a.LiveStats().Notified - before); got != want {
					t.Fatalf("round %d: %d notified, want %d", round, got, want)
				}
				drain()
			}
		})
	}
}
