package adapter

import (
	"bytes"
	"context"
	"encoding/json"
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

// listenWithCloser opens a subscriptions/listen stream on f's session
// whose request context carries lc, as HTTPHandler's does: Close ends that
// listen through lc. It returns once the stream is
// acknowledged.
func listenWithCloser(f *fakeClient, lc *listenCloser, uris ...string) {
	f.listenIn(func(ctx context.Context, id int, cancel context.CancelFunc) context.Context {
		lc.id, lc.cancel = json.RawMessage(fmt.Sprint(id)), cancel
		return withListenCloser(ctx, lc)
	}, uris...)
}

// Close's doc: "through HTTPHandler, the writes into a stream whose client
// stopped reading are cut short at ctx's end". Here the listen stream is
// idle when Close comes (mcp-go is not writing into it), and the client
// has stopped reading: the answer Close itself writes
// (httpEdge.finishListen) blocks, and must be cut short too.
func TestCloseCutsShortItsOwnStalledWrite(t *testing.T) {
	a := newLiveServer(t, newItemStore(2))
	f := newFakeClient(t, a, "f", 16)
	e, w := stalledEdge()
	listenWithCloser(f, &listenCloser{edge: e}, "app://items_show/1")
	if got := a.LiveStats().Subscriptions; got != 1 {
		t.Fatalf("subscriptions: %d, want 1", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- a.Close(ctx) }()
	select {
	case err := <-closed:
		t.Logf("Close: %v", err)
	case <-time.After(5 * time.Second):
		// Let the blocked write fail, so that the goroutines end.
		_ = w.SetWriteDeadline(time.Now())
		<-closed
		t.Fatal("Close(50ms) still blocked 5s later: its own write of the listen result into a stalled stream is not cut short at ctx's end")
	}
}

// "A second call waits like the first." A Close made while the first one
// is still ending the listen requests (step 2) returns nil at once, before
// the first is done.
func TestSecondCloseWaitsLikeTheFirst(t *testing.T) {
	a := newLiveServer(t, newItemStore(2))
	f := newFakeClient(t, a, "f", 16)
	e, w := stalledEdge()
	// mcp-go is writing into the stalled stream when Close comes: abort
	// cuts that write short at the first Close's deadline.
	mcpgo := make(chan error, 1)
	go func() {
		_, err := (&flushingHTTPEdge{e, w}).Write([]byte("event: message\ndata: {}\n\n"))
		mcpgo <- err
	}()
	<-w.writing
	listenWithCloser(f, &listenCloser{edge: e}, "app://items_show/1")

	firstCtx, cancelFirst := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelFirst()
	first := make(chan error, 1)
	go func() { first <- a.Close(firstCtx) }()
	// Wait until the first Close is in step 2: every subscription ended,
	// the listen request not yet ended on the wire.
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelWait()
	if err := a.live.waitFor(waitCtx, func() bool { return a.live.closed && a.live.subs == 0 }); err != nil {
		t.Fatal(err)
	}

	secondCtx, cancelSecond := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelSecond()
	second := a.Close(secondCtx)
	// The first Close's last act is closing closeDone; its result reaches
	// the channel only after that, so whether first is ready yet is up to
	// the scheduler. closeDone is what says the first one is done.
	select {
	case <-a.live.closeDone:
	default:
		t.Errorf("a second Close returned %v while the first was still ending the listen requests", second)
	}
	if err := <-first; err != nil {
		t.Logf("first Close: %v; second: %v", err, second)
	}
	<-mcpgo
}

// Close(ctx) with a client that never reads its notifications: nothing is
// re-running, the delivery waits for the session's channel, and step 2
// (endAll, which closes every conn's done) frees it. Step 1 used to wait
// for no delivery at all, which only step 2 brings about: Close waited for
// ctx's end, then claimed re-runs were cancelled (with
// context.Background(), it never returned).
func TestCloseIsNotHeldByAClientThatDoesNotRead(t *testing.T) {
	st := newItemStore(2)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "slow", 1) // room for one notification, never read
	for _, u := range []string{"app://items_show/1", "app://items_show/2"} {
		if err := f.subscribe(u); err != nil {
			t.Fatal(err)
		}
	}
	st.set(1, "v2")
	st.set(2, "v2")
	a.Changed("items/1", "items/2")
	// The re-runs are done and a delivery is waiting for room.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool {
		s := a.live.statsLocked()
		return s.Running == 0 && s.Reruns == 2 && s.Delivering == 1
	}); err != nil {
		t.Fatalf("no delivery waiting: %+v", a.LiveStats())
	}

	closeCtx, cancelClose := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelClose()
	start := time.Now()
	err := a.Close(closeCtx)
	took := time.Since(start)
	if err != nil || took > time.Second {
		t.Fatalf("Close with no re-run under way took %v and returned: %v", took.Round(time.Millisecond), err)
	}
}
