package adapter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
	"github.com/mcplive/adapter/middleware"
)

// slowLive declares items_slow: its re-runs (origin Live) say they started
// and wait for gate to close or their context to end; its first runs
// answer at once.
func slowLive(a *Adapter, gate <-chan struct{}, running *atomic.Int64, started chan<- struct{}) {
	Live(a, "items_slow", "An item, slowly.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, "slow")
		if middleware.OriginFrom(ctx) == middleware.Live {
			running.Add(1)
			defer running.Add(-1)
			started <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done():
				return item{}, ctx.Err()
			}
		}
		return item{ID: args.ID, Name: "slow"}, nil
	})
}

// listening is a modern client's subscriptions/listen request, run to its
// end in the background.
type listening struct {
	done chan error
}

func listenUntilEnd(t *testing.T, w *watcher, uris ...string) *listening {
	t.Helper()
	l := &listening{done: make(chan error, 1)}
	go func() {
		l.done <- w.c.Listen(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: uris})
	}()
	select {
	case a := <-w.acks:
		if len(a.uris) != len(uris) {
			t.Fatalf("acknowledged %v of %v", a.uris, uris)
		}
	case err := <-l.done:
		t.Fatalf("listen ended before its acknowledgement: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no acknowledgement")
	}
	return l
}

// TestCloseUnderLoad closes an adapter with listen streams open on every
// transport, a legacy subscription, and re-runs in flight. The re-runs
// finish, every listen request ends with its result, nothing is left in
// the registry, and no goroutine outlives Close.
func TestCloseUnderLoad(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(10)
	gate := make(chan struct{})
	var running atomic.Int64
	started := make(chan struct{}, 16)
	a := newLiveServer(t, st)
	slowLive(a, gate, &running, started)

	var listens []*listening
	var watchers []*watcher
	for _, tr := range liveTransports {
		w := tr.dial(t, a, false)
		watchers = append(watchers, w)
		listens = append(listens, listenUntilEnd(t, w, "app://items_show/1", fmt.Sprintf("app://items_slow/%d", len(listens)+1)))
	}
	legacy := dialHTTP(t, a, true)
	watchers = append(watchers, legacy)
	if acked, _, _ := legacy.subscribe(t, context.Background(), "app://items_show/2"); len(acked) != 1 {
		t.Fatal("legacy subscribe refused")
	}

	// Re-runs in flight: the slow ones wait for the gate.
	a.Changed("slow")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range liveTransports {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatalf("re-runs not under way: %+v", a.LiveStats())
		}
	}

	closed := make(chan error, 1)
	go func() { closed <- a.Close(ctx) }()
	// Close waits for the re-runs under way, and takes nothing new.
	if err := a.live.waitFor(ctx, func() bool { return a.live.closed }); err != nil {
		t.Fatal(err)
	}
	before := a.LiveStats().Reruns
	st.set(1, "v2")
	a.Changed("items/1") // after Close began: nothing
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the re-runs under way finished", err)
	default:
	}
	close(gate)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := a.LiveStats(); got.Reruns != before+uint64(len(liveTransports)) || got.Subscriptions != 0 || got.Queries != 0 || got.Running != 0 {
		t.Fatalf("after Close: %+v", got)
	}
	for i, l := range listens {
		select {
		case err := <-l.done:
			if err != nil {
				t.Errorf("%s: the listen request ended with %v, want its result", liveTransports[i].name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the listen request did not end", liveTransports[i].name)
		}
	}

	// Nothing new is taken: a listen acknowledges none of the adapter's
	// URIs, a subscribe is refused.
	if acked, refused, _ := legacy.subscribe(t, ctx, "app://items_show/3"); len(acked) != 0 || refused["app://items_show/3"] == nil {
		t.Fatalf("subscribe after Close: acknowledged %v", acked)
	}
	for _, w := range watchers {
		w.shutdown()
	}
	waitEmpty(t, a)
	if err := a.Close(ctx); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestCloseCancelsAtItsDeadline: a re-run that would wait for ever is
// cancelled when Close's context ends, and Close says so.
func TestCloseCancelsAtItsDeadline(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	var running atomic.Int64
	started := make(chan struct{}, 1)
	a := newLiveServer(t, newItemStore(1))
	slowLive(a, make(chan struct{}), &running, started) // the gate never opens
	f := newFakeClient(t, a, "f", 8)
	if err := f.subscribe("app://items_slow/1"); err != nil {
		t.Fatal(err)
	}
	a.Changed("slow")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("no re-run under way")
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	err := a.Close(short)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want the deadline's error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v past a 50ms deadline", took)
	}
	// The cancelled re-run returns; then a Close with time finds nothing.
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close after the cancelled re-run: %v", err)
	}
	if running.Load() != 0 {
		t.Fatal("the re-run is still running")
	}
}

// TestRerunDeadline: a re-run past WithRerunTimeout counts as failed: it is
// logged, notifies no one, and the query runs again on the next change.
func TestRerunDeadline(t *testing.T) {
	var logs syncBuffer
	st := newItemStore(3)
	a := newLiveServer(t, st, WithRerunTimeout(20*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	var slow atomic.Bool
	Live(a, "items_late", "An item, late when asked.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, fmt.Sprintf("items/%d", args.ID))
		v, _ := st.get(args.ID)
		if slow.Load() {
			<-ctx.Done() // a query that takes as long as it is allowed
			return item{}, ctx.Err()
		}
		return item{ID: args.ID, Name: v}, nil
	})
	f := newFakeClient(t, a, "f", 8)
	if err := f.subscribe("app://items_late/1"); err != nil {
		t.Fatal(err)
	}

	slow.Store(true)
	st.set(1, "v2")
	a.Changed("items/1")
	waitIdle(t, a)
	if got := a.LiveStats(); got.Late != 1 || got.Notified != 0 {
		t.Fatalf("after a late re-run: %+v, want 1 late and no notification", got)
	}
	if !bytes.Contains(logs.bytes(), []byte("outlived its deadline")) {
		t.Fatalf("the late re-run was not logged: %s", logs.bytes())
	}

	// The next change runs it again, in time: now the change is heard.
	slow.Store(false)
	a.Changed("items/1")
	waitIdle(t, a)
	if got := a.LiveStats(); got.Late != 1 || got.Notified != 1 {
		t.Fatalf("after the retry: %+v, want the notification", got)
	}
	if got := f.take(); len(got) != 1 || got[0] != "app://items_late/1" {
		t.Fatalf("heard %v", got)
	}
}

// syncBuffer is a bytes.Buffer that a logger may write from any goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Close: "from the moment it is called ... no queued re-run starts". The
// queries a worker took as a chunk, behind the one it is running, have not
// started either; they must not start once Close has begun.
func TestCloseStartsNoMoreOfAChunk(t *testing.T) {
	const queries = 8
	started := make(chan string, 2*queries)
	gate := make(chan struct{})
	a := Wrap(server.NewMCPServer("t", "1"))
	a.live.maxRuns = 1 // one worker, which takes every query as one chunk
	Live(a, "slow", "", func(ctx context.Context, args kArgs) (string, error) {
		Reads(ctx, "k")
		if middleware.OriginFrom(ctx) == middleware.Live {
			started <- args.K
			<-gate
		}
		return args.K + "!", nil
	})
	c := newFakeClient(t, a, "s1", 64)
	for i := range queries {
		if err := c.subscribe("app://slow/q" + string(rune('0'+i))); err != nil {
			t.Fatalf("subscribe: %+v", err)
		}
	}
	a.Changed("k")
	<-started // the first of the chunk is under way; the others wait

	closed := make(chan error, 1)
	go func() { closed <- a.Close(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool { return a.live.closed }); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(started); n != 0 {
		t.Fatalf("%d queued re-runs started after Close began, want 0 (only the one under way may finish)", n)
	}
}
