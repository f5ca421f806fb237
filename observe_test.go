package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// recorder is an Observer that keeps every operation it is told of, with
// the operation whose context it began in as its parent.
type recorder struct {
	mu  sync.Mutex
	ops []*recorded
}

type recorded struct {
	r       *recorder
	op      Op
	parent  *recorded
	phases  []string
	outcome Outcome
	err     error
	ends    int
}

type recordedKey struct{}

func (r *recorder) Observe(ctx context.Context, op Op) (context.Context, Observation) {
	rec := &recorded{r: r, op: op}
	rec.parent, _ = ctx.Value(recordedKey{}).(*recorded)
	r.mu.Lock()
	r.ops = append(r.ops, rec)
	r.mu.Unlock()
	return context.WithValue(ctx, recordedKey{}, rec), rec
}

func (o *recorded) Phase(name string, start, end time.Time) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	if start.IsZero() || end.Before(start) {
		name += "(bad times)"
	}
	o.phases = append(o.phases, name)
}

func (o *recorded) End(outcome Outcome, err error) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.outcome, o.err = outcome, err
	o.ends++
}

// take returns the operations of kind recorded so far, and forgets them.
func (r *recorder) take(kind OpKind) []*recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out, rest []*recorded
	for _, o := range r.ops {
		if o.op.Kind == kind {
			out = append(out, o)
		} else {
			rest = append(rest, o)
		}
	}
	r.ops = rest
	return out
}

func TestObserverRead(t *testing.T) {
	rec := &recorder{}
	a := newLiveServer(t, newItemStore(3), WithObserver(rec), WithGrant(func(_ context.Context, name string) bool {
		return name != "items_hidden"
	}))
	var nested atomic.Bool // the command ran in the read's context
	Live(a, "items_hidden", "Not for agents.", func(ctx context.Context, args itemArgs) (item, error) {
		return item{}, nil
	})
	Live(a, "items_nested", "Checks its context.", func(ctx context.Context, args itemArgs) (item, error) {
		o, _ := ctx.Value(recordedKey{}).(*recorded)
		nested.Store(o != nil && o.op.Kind == OpRead && o.op.Command == "items_nested")
		return item{ID: args.ID}, nil
	})
	f := newFakeClient(t, a, "s1", 16)
	all := []string{PhaseParse, PhaseConvert, PhaseValidate, PhaseCommand}
	for _, tc := range []struct {
		uri     string
		outcome Outcome
		phases  []string
	}{
		{"app://items_show/1", OutcomeOK, all},
		{"app://items_show/99", OutcomeNotFound, all},        // ErrNotFound
		{"app://items_show/0", OutcomeInvalid, all[:3]},      // Validate
		{"app://items_show/x", OutcomeInvalid, all[:2]},      // conversion
		{"app://items_show/1/2", OutcomeNotFound, all[:1]},   // the template's shape
		{"app://items_hidden/1", OutcomeNotFound, nil},       // not granted
		{"app://items_nested/7", OutcomeOK, all},             // see nested
		{"app://unknown/1", "", nil},                         // not the adapter's
		{"other://items_show/1", "", nil},                    // not the adapter's
		{"app://items_show/1?x=1", OutcomeNotFound, all[:1]}, // unknown parameter
		{"app://items_show/%32", OutcomeOK, all},             // percent-encoded 2
	} {
		t.Run(tc.uri, func(t *testing.T) {
			f.call("resources/read", map[string]any{"uri": tc.uri})
			ops := rec.take(OpRead)
			if tc.outcome == "" {
				if len(ops) != 0 {
					t.Fatalf("%d reads observed, want none", len(ops))
				}
				return
			}
			if len(ops) != 1 {
				t.Fatalf("%d reads observed, want 1", len(ops))
			}
			o := ops[0]
			if o.op.URI != tc.uri || o.op.Start.IsZero() || o.ends != 1 {
				t.Errorf("op %+v, ended %d times", o.op, o.ends)
			}
			if o.outcome != tc.outcome || (o.err == nil) != (tc.outcome == OutcomeOK) {
				t.Errorf("outcome %q (error %v), want %q", o.outcome, o.err, tc.outcome)
			}
			if !slices.Equal(o.phases, tc.phases) {
				t.Errorf("phases %q, want %q", o.phases, tc.phases)
			}
		})
	}
	if !nested.Load() {
		t.Error("the command did not run in the context the Observer returned")
	}
}

func TestObserverCall(t *testing.T) {
	rec := &recorder{}
	a := newLiveServer(t, newItemStore(3), WithObserver(rec), WithRateLimit(rate.Every(time.Hour), 1))
	f := newFakeClient(t, a, "s1", 16)
	for _, want := range []Outcome{OutcomeOK, OutcomeRateLimited} {
		f.call("tools/call", map[string]any{"name": "items_show", "arguments": map[string]any{"id": 1}})
		ops := rec.take(OpCall)
		if len(ops) != 1 || ops[0].outcome != want || ops[0].op.Command != "items_show" || ops[0].ends != 1 {
			t.Fatalf("calls %+v, want one %q", ops, want)
		}
	}
	f.call("tools/call", map[string]any{"name": "items_count", "arguments": "not an object"})
	if ops := rec.take(OpCall); len(ops) != 1 || ops[0].outcome != OutcomeInvalid {
		t.Fatalf("calls %+v, want one invalid", ops)
	}
}

type writerKey struct{}

func TestObserverRerunAndNotify(t *testing.T) {
	rec := &recorder{}
	st := newItemStore(3)
	a := newLiveServer(t, st, WithObserver(rec))
	f := newFakeClient(t, a, "s1", 16)
	if acked, _ := f.listen(t, "app://items_show/1", "app://items_show/01"); len(acked) != 2 {
		t.Fatalf("acknowledged %q", acked)
	}
	writer := context.WithValue(context.Background(), writerKey{}, "the write")
	st.set(1, "v2")
	a.ChangedContext(writer, "items/1", "items/3")
	waitIdle(t, a)

	reruns, notifies := rec.take(OpRerun), rec.take(OpNotify)
	if len(reruns) != 1 || len(notifies) != 1 {
		t.Fatalf("%d re-runs and %d notification batches, want 1 and 1", len(reruns), len(notifies))
	}
	rr, n := reruns[0], notifies[0]
	if rr.op.Command != "items_show" || !slices.Equal(rr.op.Keys, []string{"items/1"}) || rr.outcome != OutcomeChanged || rr.ends != 1 {
		t.Errorf("re-run %+v, outcome %q", rr.op, rr.outcome)
	}
	// The run is its one phase, timed when it returns: the worker may
	// apply it, and End it, a chunk of runs later.
	if !slices.Equal(rr.phases, []string{PhaseCommand}) {
		t.Errorf("re-run phases %q, want the command's", rr.phases)
	}
	if len(rr.op.Causes) != 1 || rr.op.Causes[0].Value(writerKey{}) != "the write" {
		t.Errorf("re-run causes %v, want the writer's context", rr.op.Causes)
	}
	if n.parent != rr || n.op.Count != 2 || n.outcome != OutcomeOK {
		t.Errorf("notification batch %+v (parent %p, re-run %p), want 2 queued under the re-run", n.op, n.parent, rr)
	}
	if got := len(f.notes()); got != 2 {
		t.Errorf("%d notifications delivered, want 2", got)
	}

	// A change that changes nothing: a re-run, no batch.
	a.Changed("items")
	waitIdle(t, a)
	reruns = rec.take(OpRerun)
	if len(reruns) != 1 || reruns[0].outcome != OutcomeUnchanged || reruns[0].op.Keys[0] != "items" || len(reruns[0].op.Causes) != 0 {
		t.Errorf("re-runs %+v, want one unchanged, caused by items without a context", reruns)
	}
	if n := rec.take(OpNotify); len(n) != 0 {
		t.Errorf("%d notification batches for an unchanged result", len(n))
	}
}

// TestObserverCoalescedCauses: changes that reach a running query cost it
// one more run, which carries all their causes, up to the bounds.
func TestObserverCoalescedCauses(t *testing.T) {
	rec := &recorder{}
	g := &gatedStore{value: "a"}
	a := newGatedServer(t, g, WithObserver(rec))
	f := newFakeClient(t, a, "s1", 16)
	if err := f.subscribe("app://value_get/x"); err != nil {
		t.Fatal(err)
	}
	entered, release := g.hold()
	g.set("b")
	a.Changed("value")
	<-entered // the first re-run holds
	g.open()
	g.set("c")
	const writes = MaxCauses + 4
	for i := range writes {
		ctx := context.WithValue(context.Background(), writerKey{}, i)
		// The second key is a row of another table: each write reaches
		// the query once, through "value".
		a.ChangedContext(ctx, "value", fmt.Sprintf("other/%d", i))
	}
	a.ChangedContext(context.Background(), "value/1") // a row of the table it read
	close(release)
	waitIdle(t, a)

	// The first change during the run owes one more run; the others
	// coalesce into it.
	if got := a.LiveStats().Coalesced; got != writes {
		t.Errorf("Coalesced %d, want %d", got, writes)
	}
	reruns := rec.take(OpRerun)
	if len(reruns) != 2 {
		t.Fatalf("%d re-runs, want 2", len(reruns))
	}
	second := reruns[1].op
	if !slices.Equal(second.Keys, []string{"value", "value/1"}) {
		t.Errorf("keys %q, want each once, in order", second.Keys)
	}
	if len(second.Causes) != MaxCauses {
		t.Fatalf("%d causes, want the first %d", len(second.Causes), MaxCauses)
	}
	for i, c := range second.Causes {
		if c.Value(writerKey{}) != i {
			t.Errorf("cause %d is write %v", i, c.Value(writerKey{}))
		}
	}
}

func TestObserverCauseKeysBounded(t *testing.T) {
	rec := &recorder{}
	g := &gatedStore{value: "a"}
	a := newGatedServer(t, g, WithObserver(rec))
	f := newFakeClient(t, a, "s1", 16)
	if err := f.subscribe("app://value_get/x"); err != nil {
		t.Fatal(err)
	}
	entered, release := g.hold()
	a.Changed("value")
	<-entered
	g.open()
	var want []string
	for i := range 3 * MaxCauseKeys {
		k := fmt.Sprintf("value/%d", i)
		a.Changed(k, k) // a key repeated is one key
		if len(want) < MaxCauseKeys {
			want = append(want, k)
		}
	}
	close(release)
	waitIdle(t, a)
	reruns := rec.take(OpRerun)
	if len(reruns) != 2 || !slices.Equal(reruns[1].op.Keys, want) {
		t.Fatalf("re-runs %+v, want the second caused by %q", reruns, want)
	}
}

// TestNoObserverKeepsNoCauses: without an Observer, ChangedContext keeps
// no context and no key.
func TestNoObserverKeepsNoCauses(t *testing.T) {
	g := &gatedStore{value: "a"}
	a := newGatedServer(t, g)
	f := newFakeClient(t, a, "s1", 16)
	if err := f.subscribe("app://value_get/x"); err != nil {
		t.Fatal(err)
	}
	entered, release := g.hold()
	a.Changed("value")
	<-entered
	g.open()
	a.ChangedContext(context.WithValue(context.Background(), writerKey{}, 1), "value")
	a.live.mu.Lock()
	for _, q := range a.live.queries {
		if q.causes != nil {
			t.Errorf("query %s kept causes %+v", q.key.args, q.causes)
		}
	}
	a.live.mu.Unlock()
	close(release)
	waitIdle(t, a)
}

func TestLiveStatsRefused(t *testing.T) {
	a := newLiveServer(t, newItemStore(3), WithSubscriptionCap(1))
	f := newFakeClient(t, a, "s1", 16)
	acked, _ := f.listen(t, "app://items_show/1", "app://items_show/2", "app://items_show/x", "app://nothing/1", "other://x")
	if !slices.Equal(acked, []string{"app://items_show/1", "other://x"}) {
		t.Fatalf("acknowledged %q", acked)
	}
	if err := f.subscribe("app://items_show/x"); err == nil {
		t.Fatal("a URI that does not convert was subscribed")
	}
	// Over the cap, not converting, naming nothing, and once more on the
	// legacy path; a foreign URI is not the adapter's to refuse.
	if got := a.LiveStats().Refused; got != 4 {
		t.Errorf("Refused %d, want 4", got)
	}
}

func TestLiveQueries(t *testing.T) {
	st := newItemStore(3)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "s1", 16)
	changed := a.LiveChanged()
	f.listen(t, "app://items_show/2", "app://items_show/02", "app://items_count")
	select {
	case <-changed:
	default:
		t.Fatal("LiveChanged did not close at a subscription")
	}
	changed = a.LiveChanged()
	before := time.Now()
	st.set(2, "v2")
	a.Changed("items/2")
	<-changed // the change itself
	waitIdle(t, a)

	qs := a.LiveQueries()
	if len(qs) != 2 {
		t.Fatalf("%d queries, want 2: %+v", len(qs), qs)
	}
	count, show := qs[0], qs[1]
	if count.Command != "items_count" || string(count.Arguments) != "{}" || count.Subscribers != 1 ||
		!slices.Equal(count.Reads, []string{"items"}) || count.Reruns != 1 || !count.LastChange.IsZero() {
		t.Errorf("items_count: %+v, want one unchanged re-run", count)
	}
	if show.Command != "items_show" || string(show.Arguments) != `{"id":2}` || show.Subscribers != 2 ||
		!slices.Equal(show.Reads, []string{"items/2"}) || show.Reruns != 1 || show.LastChange.Before(before) || show.State != "idle" {
		t.Errorf("items_show: %+v, want one changed re-run", show)
	}
	// The report is the caller's: writing into it changes nothing held.
	show.Reads[0] = "scribbled"
	if again := a.LiveQueries(); !slices.Equal(again[1].Reads, []string{"items/2"}) {
		t.Errorf("after the caller wrote into a report's Reads, the query reads %q", again[1].Reads)
	}
}

// TestObserverRerunOfEverythingHasNoKeys: a re-run that a change of
// everything caused (a change feed's ChangedAll) has nil Keys, as Op
// documents, even when changed keys reached the query too: the keys
// would tell an Observer a narrower cause than the real one.
func TestObserverRerunOfEverythingHasNoKeys(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(a *Adapter, feed *fakeFeed)
		want   []string
	}{
		{"keys", func(a *Adapter, _ *fakeFeed) { a.Changed("value/1", "value") }, []string{"value/1", "value"}},
		{"all", func(_ *Adapter, feed *fakeFeed) { feed.sink.ChangedAll() }, nil},
		{"keys then all", func(a *Adapter, feed *fakeFeed) { a.Changed("value"); feed.sink.ChangedAll() }, nil},
		{"all then keys", func(a *Adapter, feed *fakeFeed) { feed.sink.ChangedAll(); a.Changed("value") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			g := &gatedStore{value: "a"}
			feed := &fakeFeed{}
			a := newGatedServer(t, g, WithObserver(rec), WithChangeFeed(feed))
			f := newFakeClient(t, a, "s1", 16)
			if err := f.subscribe("app://value_get/x"); err != nil {
				t.Fatal(err)
			}
			// The changes reach the query while a first run holds, so
			// that they all cause its second run.
			entered, release := g.hold()
			a.Changed("other")
			feed.sink.ChangedAll()
			<-entered
			g.open()
			tc.change(a, feed)
			close(release)
			waitIdle(t, a)
			reruns := rec.take(OpRerun)
			if len(reruns) != 2 {
				t.Fatalf("%d re-runs, want 2", len(reruns))
			}
			if got := reruns[1].op.Keys; !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("Keys %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestObserverCancelled: a read or a tools/call whose request was
// cancelled while its command ran (the client gave up) ends canceled, not
// internal: the adapter logs it at Debug, as no failure of the server's,
// and an Observer must not count it as one.
func TestObserverCancelled(t *testing.T) {
	rec := &recorder{}
	a := newLiveServer(t, newItemStore(3), WithObserver(rec))
	entered := make(chan struct{}, 1)
	Live(a, "items_wait", "Waits for its client to give up.", func(ctx context.Context, args itemArgs) (item, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return item{}, ctx.Err()
	})
	for _, tc := range []struct {
		kind   OpKind
		method string
		params map[string]any
	}{
		{OpRead, "resources/read", map[string]any{"uri": "app://items_wait/1"}},
		{OpCall, "tools/call", map[string]any{"name": "items_wait", "arguments": map[string]any{"id": 1}}},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": tc.method, "params": tc.params})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.HandleMessage(ctx, msg)
			}()
			<-entered
			cancel()
			<-done
			ops := rec.take(tc.kind)
			if len(ops) != 1 || ops[0].ends != 1 || ops[0].outcome != OutcomeCanceled {
				t.Fatalf("observed %+v, want one ended %q", ops, OutcomeCanceled)
			}
		})
	}

	// A command that returns context.Canceled of its own, while its
	// request goes on, failed.
	Live(a, "items_cancels", "Fails with a cancellation of its own.", func(ctx context.Context, args itemArgs) (item, error) {
		return item{}, context.Canceled
	})
	a.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://items_cancels/1"}}`))
	if ops := rec.take(OpRead); len(ops) != 1 || ops[0].outcome != OutcomeInternal {
		t.Fatalf("observed %+v, want one internal", ops)
	}
}
