package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/internal/leakcheck"
	"github.com/mcplive/adapter/middleware"
)

// The batch form of a live command (WithBatch): a store of named items,
// whose single form reads one item and whose batch form reads many at once
// and can be made to misbehave.

type itemID struct {
	ID int64 `json:"id"`
}

type namedItem struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// batchMode is how the batch form answers.
type batchMode int

const (
	batchOK          batchMode = iota
	batchFails                 // fails as a whole
	batchShort                 // returns one result too few
	batchShortErrs             // returns a BatchErrors one entry too short
	batchPanics                // panics
	batchBlocks                // waits until its context ends
	batchGated                 // waits at the gate, then answers
	batchNamesShared           // also reports a read shared by every set
)

type batchStore struct {
	mu    sync.Mutex
	names map[int64]string
	mode  batchMode
	// yield makes the batch form let other goroutines run between the
	// items it reads, so that writes land in the middle of batches.
	yield bool

	singles atomic.Int64 // runs of the single form
	sizes   chan int     // the size of every call of the batch form
	// reached and gate hold a batch of mode batchGated mid-run.
	reached chan struct{}
	gate    chan struct{}
	// sawEnd is closed by a blocked batch when its context ends.
	sawEnd chan struct{}
}

func newBatchStore(n int) *batchStore {
	s := &batchStore{names: map[int64]string{}, sizes: make(chan int, 1024),
		reached: make(chan struct{}, 1), gate: make(chan struct{}), sawEnd: make(chan struct{})}
	for i := int64(1); i <= int64(n); i++ {
		s.names[i] = "v1"
	}
	return s
}

func (s *batchStore) set(id int64, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" {
		delete(s.names, id)
		return
	}
	s.names[id] = name
}

func (s *batchStore) get(id int64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name, ok := s.names[id]
	return name, ok
}

func (s *batchStore) setMode(m batchMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

func itemKey(id int64) string { return fmt.Sprintf("items/%d", id) }

func (s *batchStore) show(ctx context.Context, a itemID) (namedItem, error) {
	s.singles.Add(1)
	adapter.Reads(ctx, itemKey(a.ID))
	name, ok := s.get(a.ID)
	if !ok {
		return namedItem{}, fmt.Errorf("item %d: %w", a.ID, adapter.ErrNotFound)
	}
	return namedItem{ID: a.ID, Name: name}, nil
}

func (s *batchStore) showMany(ctx context.Context, args []itemID) ([]namedItem, error) {
	s.sizes <- len(args)
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	out := make([]namedItem, len(args))
	var errs adapter.BatchErrors
	for i, a := range args {
		if s.yield {
			runtime.Gosched()
		}
		adapter.ReadsAt(ctx, i, itemKey(a.ID))
		name, ok := s.get(a.ID)
		if !ok {
			if errs == nil {
				errs = make(adapter.BatchErrors, len(args))
			}
			errs[i] = fmt.Errorf("item %d: %w", a.ID, adapter.ErrNotFound)
			continue
		}
		out[i] = namedItem{ID: a.ID, Name: name}
	}
	switch mode {
	case batchFails:
		return nil, errors.New("the database is away")
	case batchPanics:
		panic("batch bug")
	case batchBlocks:
		<-ctx.Done()
		close(s.sawEnd)
		return nil, ctx.Err()
	case batchGated:
		// What it read may be stale by the time it returns.
		s.reached <- struct{}{}
		<-s.gate
	case batchNamesShared:
		adapter.Reads(ctx, "catalog")
	case batchShort:
		return out[1:], nil
	case batchShortErrs:
		return out, make(adapter.BatchErrors, len(args)-1)
	}
	if errs != nil {
		return out, errs
	}
	return out, nil
}

// calls drains the sizes of the batch calls made so far.
func (s *batchStore) calls() []int {
	var sizes []int
	for {
		select {
		case n := <-s.sizes:
			sizes = append(sizes, n)
		default:
			return sizes
		}
	}
}

// batchApp declares items_show with its batch form, and subscribes to
// items 1..n over one listen stream of a new client.
func batchApp(t *testing.T, st *batchStore, n int, opts ...adapter.Option) (*adapter.Adapter, *adaptertest.Subscription) {
	t.Helper()
	opts = append([]adapter.Option{adapter.WithSubscriptionCap(1000), adapter.WithClientSubscriptionCap(1000)}, opts...)
	a := adapter.Wrap(server.NewMCPServer("t", "1"), opts...)
	adapter.Live(a, "items_show", "One item.", st.show, adapter.WithBatch(st.showMany))
	c := adaptertest.New(t, a)
	var uris []string
	for i := 1; i <= n; i++ {
		uris = append(uris, fmt.Sprintf("app://items_show/%d", i))
	}
	sub, err := c.Listen(uris...)
	if err != nil || len(sub.Acknowledged) != n {
		t.Fatalf("listen: %v, %d acknowledged, want %d", err, len(sub.Acknowledged), n)
	}
	st.singles.Store(0)
	st.calls()
	return a, sub
}

func waitIdle(t *testing.T, a *adapter.Adapter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v (%+v)", err, a.LiveStats())
	}
}

// taken is what sub received since the last call, sorted.
func taken(t *testing.T, a *adapter.Adapter, sub *adaptertest.Subscription) []string {
	t.Helper()
	waitIdle(t, a)
	adaptertest.New(t, a).WaitIdle() // and every client has what was handed to it
	got := sub.Take()
	slices.Sort(got)
	return got
}

// One change re-runs every subscribed argument set in one call of the
// batch form; each keeps its own result, error and notification: those
// whose result changed hear of it, those whose result did not (or still
// fails the same way) do not.
func TestBatchRerun(t *testing.T) {
	st := newBatchStore(5) // item 6 does not exist
	a, sub := batchApp(t, st, 6)

	st.set(1, "v2")
	st.set(3, "v2")
	a.Changed("items")
	if got, want := taken(t, a, sub), []string{"app://items_show/1", "app://items_show/3"}; !slices.Equal(got, want) {
		t.Errorf("heard %q, want %q", got, want)
	}
	if sizes, singles := st.calls(), st.singles.Load(); !slices.Equal(sizes, []int{6}) || singles != 0 {
		t.Errorf("batch calls %v and %d single runs, want one call of 6 and none", sizes, singles)
	}

	// Mixed errors: item 2 starts failing, item 6 stops.
	st.set(2, "")
	st.set(6, "v1")
	a.Changed("items")
	if got, want := taken(t, a, sub), []string{"app://items_show/2", "app://items_show/6"}; !slices.Equal(got, want) {
		t.Errorf("heard %q, want %q", got, want)
	}
	if st := a.LiveStats(); st.Reruns != 12 || st.Late != 0 {
		t.Errorf("stats %+v, want 12 re-runs", st)
	}
}

// The read sets of a batched run are each argument set's: a change to one
// item re-runs its query alone, with the single form; a key the batch
// reported with Reads is every set's.
func TestBatchReadSets(t *testing.T) {
	st := newBatchStore(4)
	a, sub := batchApp(t, st, 4)
	st.setMode(batchNamesShared)
	a.Changed("items")
	taken(t, a, sub)
	st.calls()

	st.set(3, "v2")
	a.Changed("items/3")
	if got := taken(t, a, sub); !slices.Equal(got, []string{"app://items_show/3"}) {
		t.Errorf("heard %q", got)
	}
	if sizes, singles := st.calls(), st.singles.Load(); len(sizes) != 0 || singles != 1 {
		t.Errorf("a change to items/3: batch calls %v and %d single runs, want one single run", sizes, singles)
	}
	// The single run read only items/3: "catalog" is still the read of
	// the other three.
	a.Changed("catalog")
	waitIdle(t, a)
	if sizes := st.calls(); !slices.Equal(sizes, []int{3}) {
		t.Errorf("a change to catalog: batch calls %v, want one of the 3 sets that read it", sizes)
	}
}

// A batch that fails as a whole, or answers with the wrong number of
// results or errors, or panics, is logged, and each of its argument sets
// runs again alone: no subscriber misses a notification.
func TestBatchFallback(t *testing.T) {
	for _, tc := range []struct {
		mode batchMode
		log  string
	}{
		{batchFails, "the database is away"},
		{batchShort, "returned 3 results for 4 argument sets"},
		{batchShortErrs, "returned 3 errors for 4 argument sets"},
		{batchPanics, "panic"},
	} {
		t.Run(tc.log, func(t *testing.T) {
			var logs syncBuffer
			st := newBatchStore(4)
			a, sub := batchApp(t, st, 4, adapter.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			st.setMode(tc.mode)
			st.set(2, "v2")
			st.set(4, "")
			a.Changed("items")
			if got, want := taken(t, a, sub), []string{"app://items_show/2", "app://items_show/4"}; !slices.Equal(got, want) {
				t.Errorf("heard %q, want %q", got, want)
			}
			if sizes, singles := st.calls(), st.singles.Load(); !slices.Equal(sizes, []int{4}) || singles != 4 {
				t.Errorf("batch calls %v and %d single runs, want one call of 4, then 4 single runs", sizes, singles)
			}
			if out := logs.String(); !strings.Contains(out, "one by one") || !strings.Contains(out, tc.log) {
				t.Errorf("log does not say the batch failed (%q):\n%s", tc.log, out)
			}
			if stats := a.LiveStats(); stats.Reruns != 4 {
				t.Errorf("%d re-runs counted, want 4 (the failed batch is not one)", stats.Reruns)
			}
		})
	}
}

// A change that lands while a batch runs is not lost: the argument sets it
// affects run once more when the batch ends, and their subscribers hear
// the final state.
func TestBatchChangeDuringRun(t *testing.T) {
	st := newBatchStore(4)
	a, sub := batchApp(t, st, 4)
	st.setMode(batchGated)
	st.set(1, "v2")
	a.Changed("items")
	<-st.reached // the batch read what it reads, and waits
	st.setMode(batchOK)
	st.set(3, "v3")
	a.Changed("items/3")
	close(st.gate)

	got := taken(t, a, sub)
	if !slices.Contains(got, "app://items_show/1") || !slices.Contains(got, "app://items_show/3") {
		t.Errorf("heard %q, want items 1 and 3", got)
	}
	c := adaptertest.New(t, a)
	if text, err := c.Read("app://items_show/3"); err != nil || !strings.Contains(text, "v3") {
		t.Errorf("item 3 reads %s, %v", text, err)
	}
	// Item 3 again; the read is answered from the result that run kept.
	if singles := st.singles.Load(); singles != 1 {
		t.Errorf("%d single runs, want item 3's once more, and none for the read", singles)
	}
}

// A batch that outlives the re-run deadline counts every argument set as
// late and notifies no one; the next change runs them again.
func TestBatchDeadline(t *testing.T) {
	st := newBatchStore(3)
	a, sub := batchApp(t, st, 3, adapter.WithRerunTimeout(20*time.Millisecond), adapter.WithLogger(slog.New(slog.DiscardHandler)))
	st.setMode(batchBlocks)
	st.set(1, "v2")
	a.Changed("items")
	if got := taken(t, a, sub); len(got) != 0 {
		t.Errorf("heard %q from a late batch", got)
	}
	<-st.sawEnd
	if stats := a.LiveStats(); stats.Late != 3 || stats.Reruns != 3 {
		t.Errorf("stats %+v, want 3 late re-runs", stats)
	}
	st.setMode(batchOK)
	a.Changed("items")
	if got := taken(t, a, sub); !slices.Equal(got, []string{"app://items_show/1"}) {
		t.Errorf("after the next change heard %q", got)
	}
}

// Close cancels a batch still running at its deadline, and leaves no
// goroutine behind.
func TestBatchClose(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	t.Run("close", testBatchClose) // its client ends with it
}

func testBatchClose(t *testing.T) {
	st := newBatchStore(3)
	a, _ := batchApp(t, st, 3)
	st.setMode(batchBlocks)
	a.Changed("items")
	for len(st.sizes) == 0 && a.LiveStats().Running != 0 {
		time.Sleep(time.Millisecond) // until the batch runs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Close(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v, want the deadline's error", err)
	}
	<-st.sawEnd
	if err := a.Close(context.Background()); err != nil {
		t.Errorf("Close again: %v", err)
	}
}

// A batch whose argument sets are all unsubscribed while it runs is
// cancelled, as a single run is when its query is dropped.
func TestBatchCancelledWhenUnsubscribed(t *testing.T) {
	st := newBatchStore(3)
	a, sub := batchApp(t, st, 3)
	st.setMode(batchBlocks)
	a.Changed("items")
	for len(st.sizes) == 0 {
		time.Sleep(time.Millisecond)
	}
	sub.Close()
	select {
	case <-st.sawEnd:
	case <-time.After(10 * time.Second):
		t.Fatal("the batch's context did not end when its subscriptions did")
	}
	waitIdle(t, a)
}

// More argument sets than MaxBatch are split into calls of at most
// MaxBatch.
func TestBatchSplit(t *testing.T) {
	n := adapter.MaxBatch + 44
	st := newBatchStore(n)
	a, sub := batchApp(t, st, n)
	for i := 1; i <= n; i++ {
		st.set(int64(i), "v2")
	}
	a.Changed("items")
	if got := taken(t, a, sub); len(got) != n {
		t.Errorf("heard %d notifications, want %d", len(got), n)
	}
	sizes := st.calls()
	total := 0
	for _, s := range sizes {
		total += s
		if s > adapter.MaxBatch {
			t.Errorf("a call of %d argument sets", s)
		}
	}
	if total != n || len(sizes) < 2 || st.singles.Load() != 0 {
		t.Errorf("calls %v and %d single runs, want %d sets in calls of at most %d", sizes, st.singles.Load(), n, adapter.MaxBatch)
	}
}

// A batch passes the middleware chain once, as origin Live, with every
// argument set in Args and RawArgs and their number in Batch.
func TestBatchMiddleware(t *testing.T) {
	var mu sync.Mutex
	var calls []middleware.Call
	record := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			mu.Lock()
			calls = append(calls, *call)
			mu.Unlock()
			return next(ctx, call)
		}
	}
	st := newBatchStore(3)
	a, sub := batchApp(t, st, 3, adapter.WithMiddleware(record))
	mu.Lock()
	calls = nil
	mu.Unlock()
	st.set(2, "v2")
	a.Changed("items")
	taken(t, a, sub)

	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 {
		t.Fatalf("%d calls through the chain, want 1: %+v", len(calls), calls)
	}
	call := calls[0]
	args, ok := call.Args.([]itemID)
	if call.Batch != 3 || call.Origin != middleware.Live || call.Command != "items_show" || !ok || len(args) != 3 {
		t.Fatalf("call %+v", call)
	}
	var raw []itemID
	if err := json.Unmarshal(call.RawArgs, &raw); err != nil || !slices.Equal(raw, args) {
		t.Errorf("RawArgs %s for Args %v: %v", call.RawArgs, args, err)
	}
	slices.SortFunc(args, func(x, y itemID) int { return int(x.ID - y.ID) })
	if !slices.Equal(args, []itemID{{1}, {2}, {3}}) {
		t.Errorf("Args %v", args)
	}
}

// WithBatch refuses, before anything is registered, what cannot work.
func TestWithBatchMisuse(t *testing.T) {
	st := newBatchStore(1)
	for _, tc := range []struct {
		name    string
		declare func(a *adapter.Adapter)
		want    string
	}{
		{"arguments of another type", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", st.show, adapter.WithBatch(func(context.Context, []namedItem) ([]namedItem, error) { return nil, nil }))
		}, "want a func(context.Context, []adapter_test.itemID) ([]adapter_test.namedItem, error)"},
		{"results of another type", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", st.show, adapter.WithBatch(func(context.Context, []itemID) ([]string, error) { return nil, nil }))
		}, "WithBatch with a func(context.Context, []adapter_test.itemID) ([]string, error)"},
		{"nil function", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", st.show, adapter.WithBatch[itemID, namedItem](nil))
		}, "WithBatch with a nil function"},
		{"a command that is not live", func(a *adapter.Adapter) {
			adapter.Command(a, "x", "", st.show, adapter.WithBatch(st.showMany))
		}, "not live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := adapter.Wrap(server.NewMCPServer("t", "1"))
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q, want it to say %q", msg, tc.want)
				}
				if len(a.Server().ListTools()) != 0 {
					t.Error("the command was registered anyway")
				}
			}()
			tc.declare(a)
		})
	}
}

func TestBatchErrors(t *testing.T) {
	errs := adapter.BatchErrors{nil, fmt.Errorf("item 7: %w", adapter.ErrNotFound), nil, errors.New("boom")}
	if !errors.Is(errs, adapter.ErrNotFound) {
		t.Error("errors.Is does not find the error of one set")
	}
	if got, want := errs.Error(), "argument set 1: item 7: "+adapter.ErrNotFound.Error()+" (and 1 more argument sets failed)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// syncBuffer is a bytes.Buffer that loggers on several goroutines may
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rerunEnds records how each observed re-run ended.
type rerunEnds struct {
	mu   sync.Mutex
	ends []rerunEnd
}

type rerunEnd struct {
	count   int
	keys    []string
	causes  []context.Context
	outcome adapter.Outcome
	err     error
}

func (r *rerunEnds) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	if op.Kind != adapter.OpRerun {
		return ctx, nil
	}
	return ctx, &rerunEndObservation{r: r, op: op}
}

type rerunEndObservation struct {
	r  *rerunEnds
	op adapter.Op
}

func (*rerunEndObservation) Phase(string, time.Time, time.Time) {}

func (o *rerunEndObservation) End(outcome adapter.Outcome, err error) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.r.ends = append(o.r.ends, rerunEnd{o.op.Count, o.op.Keys, o.op.Causes, outcome, err})
}

// TestBatchFallbackObserved: an Observer can tell the call of a batch
// that failed as a whole (ErrBatchFailed), which LiveStats does not count
// as re-runs, from the runs of its argument sets one by one, which it
// does.
func TestBatchFallbackObserved(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(4)
	a, _ := batchApp(t, st, 4, adapter.WithObserver(obs))
	st.setMode(batchFails)
	a.Changed("items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var failed, solo int
	for _, e := range obs.ends {
		switch {
		case errors.Is(e.err, adapter.ErrBatchFailed):
			if e.count != 4 || e.outcome != adapter.OutcomeInternal {
				t.Errorf("failed batch ended %+v, want 4 sets, internal", e)
			}
			failed++
		case e.count == 0:
			solo++
		}
	}
	if failed != 1 || solo != 4 {
		t.Errorf("re-runs ended %+v: want one failed batch and 4 runs alone", obs.ends)
	}
}

type writeKey struct{}

// TestBatchFallbackKeepsCauses: the runs alone that follow a batch that
// failed as a whole are what notifies the subscribers, so they carry the
// change that caused them, as the failed call did: else a tracing
// Observer loses the link from the write to the notifications it caused.
func TestBatchFallbackKeepsCauses(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(3)
	a, _ := batchApp(t, st, 3, adapter.WithObserver(obs))
	st.setMode(batchFails)
	a.ChangedContext(context.WithValue(context.Background(), writeKey{}, "the write"), "items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 4 {
		t.Fatalf("re-runs ended %+v: want one failed batch and 3 runs alone", obs.ends)
	}
	for _, e := range obs.ends {
		if e.count != 0 {
			continue // the failed call's
		}
		if !slices.Equal(e.keys, []string{"items"}) || len(e.causes) != 1 || e.causes[0].Value(writeKey{}) != "the write" {
			t.Errorf("run alone caused by keys %q and %d contexts, want items and the write", e.keys, len(e.causes))
		}
	}
}

// TestBatchCausesOnce: a write that reaches every argument set of a batch
// is one cause of the batch, not one per set: a tracing Observer links the
// re-run to each cause, and repeats would crowd out the other writes
// within MaxCauses.
func TestBatchCausesOnce(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(3)
	a, _ := batchApp(t, st, 3, adapter.WithObserver(obs))
	a.ChangedContext(context.WithValue(context.Background(), writeKey{}, "the write"), "items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 1 || obs.ends[0].count != 3 {
		t.Fatalf("re-runs ended %+v: want one batch of 3", obs.ends)
	}
	if e := obs.ends[0]; len(e.causes) != 1 || e.causes[0].Value(writeKey{}) != "the write" {
		t.Errorf("the batch has %d causes, want the write once", len(e.causes))
	}
}

// uncomparableCtx is a context whose values == cannot compare.
type uncomparableCtx struct {
	context.Context
	tags []string
}

// TestBatchCausesUncomparableContext: telling causes apart compares
// contexts, which must not panic, on a worker, for a context of the
// user's that cannot be compared.
func TestBatchCausesUncomparableContext(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(3)
	a, _ := batchApp(t, st, 3, adapter.WithObserver(obs))
	a.ChangedContext(uncomparableCtx{context.Background(), []string{"a"}}, "items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 1 || obs.ends[0].count != 3 || len(obs.ends[0].causes) == 0 {
		t.Fatalf("re-runs ended %+v: want one batch of 3, with its cause", obs.ends)
	}
}

// TestBatchInternalErrorObserved: a batch in which one set failed for a
// reason of the server's ends internal, with that error, wherever the set
// stood in the batch: a set that merely vanished (not found) before it
// must not hide it, as it would not for runs alone.
func TestBatchInternalErrorObserved(t *testing.T) {
	obs := &rerunEnds{}
	a := adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithObserver(obs))
	broken := errors.New("the shard is away")
	var failing atomic.Bool
	adapter.Live(a, "items_show", "One item.", func(ctx context.Context, args itemID) (namedItem, error) {
		adapter.Reads(ctx, "items")
		return namedItem{ID: args.ID}, nil
	}, adapter.WithBatch(func(ctx context.Context, args []itemID) ([]namedItem, error) {
		adapter.Reads(ctx, "items")
		out := make([]namedItem, len(args))
		errs := make(adapter.BatchErrors, len(args))
		for i, a := range args {
			out[i] = namedItem{ID: a.ID}
		}
		if failing.Load() {
			errs[0] = adapter.ErrNotFound // the agent's to see
			errs[len(args)-1] = broken    // the server's
		}
		return out, errs
	}))
	c := adaptertest.New(t, a)
	if sub, err := c.Listen("app://items_show/1", "app://items_show/2", "app://items_show/3"); err != nil || len(sub.Acknowledged) != 3 {
		t.Fatalf("listen: %v", err)
	}
	failing.Store(true)
	a.Changed("items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 1 || obs.ends[0].count != 3 {
		t.Fatalf("re-runs ended %+v: want one batch of 3", obs.ends)
	}
	if e := obs.ends[0]; e.outcome != adapter.OutcomeInternal || !errors.Is(e.err, broken) {
		t.Errorf("the batch ended %q with %v, want internal with %v", e.outcome, e.err, broken)
	}
}

// TestBatchNoLostWakeUp is the no-lost-wake-up property with batched
// re-runs: random subscriptions (both eras), writes of one item or of the
// table, deletions, unsubscriptions, batch forms that fail as a whole,
// answer with the wrong number of results or panic, and reads, while
// re-runs (batched, split into single runs, or falling back to them) and
// deliveries run in the background. Its clients behave as agents do: they
// read a URI when they subscribe to it and again whenever they hear it
// changed. At the end, once the registry is idle and every notification is
// read, every subscription's last read must equal what a read returns now,
// and the registry must hold nothing once the clients are gone.
//
// Each seed replays one sequence; a failure names its seed.
func TestBatchNoLostWakeUp(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	batches := 0
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			m := newBatchModel(t, uint64(seed))
			for range 80 {
				m.step()
			}
			m.finish()
			batches += m.batches
		})
	}
	if batches < seeds {
		t.Errorf("%d calls of the batch form in %d sequences: the property hardly met a batch", batches, seeds)
	}
}

const (
	modelItems   = 5
	modelClients = 3
)

// watched is one subscription as its client sees it, with what the client
// last read of it.
type watched struct {
	sub  *adaptertest.Subscription
	last map[string]string // by URI
}

type batchModel struct {
	t       *testing.T
	rng     *rand.Rand
	st      *batchStore
	a       *adapter.Adapter
	clients []*adaptertest.Client
	subs    [][]*watched // by client
	batches int          // calls of the batch form
}

func newBatchModel(t *testing.T, seed uint64) *batchModel {
	st := newBatchStore(modelItems)
	st.sizes = make(chan int, 1<<16)
	st.yield = true
	a := adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithLogger(slog.New(slog.DiscardHandler)))
	adapter.Live(a, "items_show", "One item.", st.show, adapter.WithBatch(st.showMany))
	m := &batchModel{t: t, rng: rand.New(rand.NewPCG(seed, 17)), st: st, a: a, subs: make([][]*watched, modelClients)}
	for i := range modelClients {
		var opts []adaptertest.Option
		if i == 0 {
			opts = append(opts, adaptertest.Legacy())
		}
		m.clients = append(m.clients, adaptertest.New(t, a, opts...))
	}
	return m
}

func (m *batchModel) uri(id int) string { return fmt.Sprintf("app://items_show/%d", id) }

// current is what a client reading uri gets now.
func (m *batchModel) current(c *adaptertest.Client, uri string) string {
	text, err := c.Read(uri)
	if err != nil {
		return "error: " + err.Error()
	}
	return text
}

func (m *batchModel) step() {
	switch op := m.rng.IntN(10); {
	case op < 2:
		m.subscribe()
	case op < 3:
		m.unsubscribe()
	case op < 6:
		m.write()
	case op < 7:
		m.st.setMode([]batchMode{batchOK, batchOK, batchFails, batchShort, batchShortErrs, batchPanics}[m.rng.IntN(6)])
	case op < 9:
		m.read(m.rng.IntN(modelClients))
	default:
		waitIdle(m.t, m.a)
	}
	m.batches += len(m.st.calls())
}

func (m *batchModel) subscribe() {
	i := m.rng.IntN(modelClients)
	c := m.clients[i]
	var uris []string
	for range 1 + m.rng.IntN(3) {
		if u := m.uri(1 + m.rng.IntN(modelItems+1)); !slices.Contains(uris, u) {
			uris = append(uris, u)
		}
	}
	sub, err := c.Listen(uris...)
	if err != nil {
		m.t.Fatalf("listen %q: %v", uris, err)
	}
	w := &watched{sub: sub, last: map[string]string{}}
	for _, u := range sub.Acknowledged {
		// The first run saw the store as it is: writes are steps of
		// their own.
		w.last[u] = m.current(c, u)
	}
	m.subs[i] = append(m.subs[i], w)
}

func (m *batchModel) unsubscribe() {
	i := m.rng.IntN(modelClients)
	if len(m.subs[i]) == 0 {
		return
	}
	k := m.rng.IntN(len(m.subs[i]))
	w := m.subs[i][k]
	if m.clients[i].Version() != adaptertest.ModernVersion {
		// Legacy subscriptions of one URI are one on the server, which
		// unsubscribing ends for all: end every subscription of the
		// client.
		for _, x := range m.subs[i] {
			x.sub.Close()
		}
		m.subs[i] = nil
		return
	}
	w.sub.Close()
	m.subs[i] = slices.Delete(m.subs[i], k, k+1)
}

func (m *batchModel) write() {
	id := 1 + m.rng.IntN(modelItems+1)
	name := []string{"", "a", "b", "c"}[m.rng.IntN(4)] // "" deletes
	m.st.set(int64(id), name)
	if m.rng.IntN(2) == 0 {
		m.a.Changed("items")
	} else {
		m.a.Changed(itemKey(int64(id)))
	}
}

// read makes client i read what it heard, once the registry is idle: a
// notification says the result differs from the one last reported, and a
// read at any other time may see a state that a burst of changes then
// coalesces away.
func (m *batchModel) read(i int) {
	c := m.clients[i]
	c.WaitIdle()
	for _, w := range m.subs[i] {
		for _, u := range w.sub.Take() {
			if _, ok := w.last[u]; ok {
				w.last[u] = m.current(c, u)
			}
		}
	}
}

func (m *batchModel) finish() {
	for i := range m.clients {
		m.read(i)
	}
	for i, c := range m.clients {
		for _, w := range m.subs[i] {
			for u, seen := range w.last {
				if now := m.current(c, u); seen != now {
					m.t.Fatalf("client %d, %s: last read %s, now %s, and no notification", i, u, seen, now)
				}
			}
		}
	}
	for i := range m.subs {
		for _, w := range m.subs[i] {
			w.sub.Close()
		}
	}
	waitIdle(m.t, m.a)
	if st := m.a.LiveStats(); st.Subscriptions != 0 || st.Queries != 0 || st.Pending != 0 {
		m.t.Fatalf("after every subscription ended: %+v", st)
	}
}
