package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// tickerStore is the data of the pacing tests: values by id, and a gate
// that holds a run of the command, after it read, until the test lets it
// go.
type tickerStore struct {
	items *itemStore
	// gated: the next run signals started once it has read, and waits
	// for release.
	gated   atomic.Bool
	started chan struct{}
	release chan struct{}
}

func newTickerStore() *tickerStore {
	return &tickerStore{items: newItemStore(3), started: make(chan struct{}, 1), release: make(chan struct{})}
}

// newPacedServer serves ticker_show {id}, reading items/{id}, paced to
// every, with opts.
func newPacedServer(t testingT, st *tickerStore, every time.Duration, opts ...Option) *Adapter {
	t.Helper()
	a := Wrap(server.NewMCPServer("pace-test", "1"), opts...)
	Live(a, "ticker_show", "One ticker.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, fmt.Sprintf("items/%d", args.ID))
		v, _ := st.items.get(args.ID)
		if st.gated.CompareAndSwap(true, false) {
			st.started <- struct{}{}
			<-st.release
		}
		return item{ID: args.ID, Name: v}, nil
	}, WithNotifyInterval(every))
	return a
}

// timedNote is a notification and when the client took it.
type timedNote struct {
	note
	at time.Time
}

// receiver takes f's notifications as they come, each with its time,
// until stop; it must start after f's subscriptions were acknowledged.
type receiver struct {
	notes chan timedNote
	stop  func()
}

func receive(t *testing.T, f *fakeClient) *receiver {
	rc := &receiver{notes: make(chan timedNote, 256)}
	done, gone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gone)
		for _, n := range f.notes() { // what came before the receiver
			rc.notes <- timedNote{n, time.Now()}
		}
		for {
			select {
			case n := <-f.s.ch:
				if x, ok := noteOf(n); ok {
					rc.notes <- timedNote{x, time.Now()}
				}
			case <-done:
				// What was handed over before stop (WaitIdle returned) and
				// not yet taken: it would have been taken now.
				for _, n := range f.notes() {
					rc.notes <- timedNote{n, time.Now()}
				}
				return
			}
		}
	}()
	rc.stop = sync.OnceFunc(func() { close(done); <-gone })
	t.Cleanup(rc.stop)
	return rc
}

// next waits up to d for the next notification.
func (rc *receiver) next(t *testing.T, d time.Duration) timedNote {
	t.Helper()
	select {
	case n := <-rc.notes:
		return n
	case <-time.After(d):
		t.Fatalf("no notification within %v", d)
		return timedNote{}
	}
}

// all stops the receiver and returns what it took.
func (rc *receiver) all() []timedNote {
	rc.stop()
	var out []timedNote
	for {
		select {
		case n := <-rc.notes:
			out = append(out, n)
		default:
			return out
		}
	}
}

// readName reads uri and returns its item's name.
func readName(t *testing.T, f *fakeClient, uri string) string {
	t.Helper()
	f.nextID++
	raw := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, f.nextID, uri)
	b, err := json.Marshal(f.a.HandleMessage(f.ctx(), raw))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result struct {
			Contents []struct{ Text string }
		}
	}
	if err := json.Unmarshal(b, &resp); err != nil || len(resp.Result.Contents) != 1 {
		t.Fatalf("read %s: %s", uri, b)
	}
	return resp.Result.Contents[0].Text
}

// 20 changes of one result within 400 ms, under a 300 ms interval: at most
// 4 notifications, at least an interval apart, the last after the last
// change, and a read then shows the last value. The writes are spaced with
// sleeps, since pacing is about time: 20 ms each, 400 ms in all.
func TestPaceBurst(t *testing.T) {
	const every = 300 * time.Millisecond
	for _, era := range scopeEras {
		t.Run(era.name, func(t *testing.T) {
			st := newTickerStore()
			a := newPacedServer(t, st, every)
			f := newFakeClient(t, a, "s1", 64)
			const uri = "app://ticker_show/1"
			if refused := era.subscribe(t, f, uri); refused {
				t.Fatal("subscription refused")
			}
			rc := receive(t, f)
			start := time.Now()
			for i := 1; i <= 20; i++ {
				st.items.set(1, fmt.Sprint("v", i))
				a.Changed("items/1")
				if i < 20 {
					time.Sleep(20 * time.Millisecond)
				}
			}
			last := time.Now()
			waitIdle(t, a)
			notes := rc.all()
			t.Logf("20 changes in %v: %d notifications", last.Sub(start).Round(time.Millisecond), len(notes))
			if len(notes) < 2 || len(notes) > 4 {
				t.Fatalf("%d notifications, want 2 to 4", len(notes))
			}
			for i := 1; i < len(notes); i++ {
				// Delivery adds its own few milliseconds to each: 50 ms of
				// slack for a loaded machine.
				if gap := notes[i].at.Sub(notes[i-1].at); gap < every-50*time.Millisecond {
					t.Errorf("notifications %d and %d %v apart, want about %v at least", i-1, i, gap, every)
				}
			}
			if end := notes[len(notes)-1].at; !end.After(last) {
				t.Errorf("the last notification came %v before the last change", last.Sub(end))
			}
			if got := readName(t, f, uri); got != `{"id":1,"name":"v20"}` {
				t.Errorf("read after the burst: %s, want v20", got)
			}
			if s := a.LiveStats(); s.Delayed != 0 || s.Pending != 0 {
				t.Errorf("after WaitIdle: %+v", s)
			}
		})
	}
}

// Two changes 0 ms apart under a 400 ms interval: the first is announced
// at once, the second after the interval, not within 50 ms; WaitIdle
// counts the delayed one as work. The command's gate makes the changes
// meet two runs: the second lands while the first runs.
func TestPaceTwoChanges(t *testing.T) {
	const every = 400 * time.Millisecond
	st := newTickerStore()
	a := newPacedServer(t, st, every)
	f := newFakeClient(t, a, "s1", 64)
	const uri = "app://ticker_show/1"
	if acked, _ := f.listen(t, uri); len(acked) != 1 {
		t.Fatalf("acknowledged %q", acked)
	}
	rc := receive(t, f)

	st.gated.Store(true)
	st.items.set(1, "v2")
	a.Changed("items/1")
	<-st.started // the re-run read v2, and waits
	st.items.set(1, "v3")
	a.Changed("items/1") // it runs once more, after this one
	changed := time.Now()
	close(st.release)

	first := rc.next(t, 5*time.Second)
	if soon := first.at.Sub(changed); soon >= every/2 {
		t.Errorf("the first notification came %v after the change, want it at once", soon)
	}
	// The second re-run finds v3 within the interval: delayed.
	waitFor(t, a, func(s LiveStats) bool { return s.Delayed == 1 })
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.WaitIdle(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitIdle with a notification delayed: %v, want the deadline", err)
	}
	second := rc.next(t, 5*time.Second)
	if gap := second.at.Sub(first.at); gap < every-50*time.Millisecond {
		t.Errorf("the second notification came %v after the first, want the interval, %v", gap, every)
	}
	waitIdle(t, a)
	if got := readName(t, f, uri); got != `{"id":1,"name":"v3"}` {
		t.Errorf("read: %s, want v3", got)
	}
	if more := rc.all(); len(more) != 0 {
		t.Errorf("more notifications: %v", more)
	}
	// Nothing is delayed: no timer is set.
	a.live.mu.Lock()
	armed, due := a.live.pacer.armed, len(a.live.pacer.due)
	a.live.mu.Unlock()
	if armed || due != 0 {
		t.Errorf("idle, the pacer is armed %v with %d due", armed, due)
	}
}

// waitFor waits, up to 10 s, until ok holds of the adapter's LiveStats.
func waitFor(t *testing.T, a *Adapter, ok func(LiveStats) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool { return ok(a.live.statsLocked()) }); err != nil {
		t.Fatalf("%+v: %v", a.LiveStats(), err)
	}
}

// Pacing works per query, with a batch form and with scopes: a tenant's
// second change within the interval is delayed and then announced to that
// tenant's subscribers only; another tenant, whose result did not change,
// hears nothing.
func TestPaceWithBatchAndScopes(t *testing.T) {
	const every = 200 * time.Millisecond
	st := newTenantStore()
	for _, tn := range []string{"a", "b"} {
		st.set(tn, 1, tn+"1")
		st.set(tn, 2, tn+"2")
	}
	var batches atomic.Int64
	run := func(ctx context.Context, args itemArgs) (item, error) {
		tenant, _ := tenantOf(ctx)
		st.mu.Lock()
		defer st.mu.Unlock()
		return item{ID: args.ID, Name: st.items[tenant][args.ID]}, nil
	}
	a := Wrap(server.NewMCPServer("pace-test", "1"), WithScope(tenantScope))
	Live(a, "tenant_show", "One item of the caller's tenant.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, "items")
		return run(ctx, args)
	}, WithNotifyInterval(every), WithBatch(func(ctx context.Context, args []itemArgs) ([]item, error) {
		batches.Add(1)
		out := make([]item, len(args))
		for i, x := range args {
			ReadsAt(ctx, i, "items")
			out[i], _ = run(ctx, x)
		}
		return out, nil
	}))
	uris := []string{"app://tenant_show/1", "app://tenant_show/2"}
	fa, fb := newFakeClient(t, a, "a-1", 64), newFakeClient(t, a, "b-1", 64)
	for _, f := range []*fakeClient{fa, fb} {
		if acked, _ := f.listen(t, uris...); len(acked) != 2 {
			t.Fatalf("acknowledged %q", acked)
		}
	}
	ra, rb := receive(t, fa), receive(t, fb)

	st.set("a", 1, "a1 again")
	st.set("a", 2, "a2 again")
	a.Changed("items")
	got := []string{ra.next(t, 5*time.Second).uri, ra.next(t, 5*time.Second).uri}
	slices.Sort(got)
	if !slices.Equal(got, uris) {
		t.Fatalf("a heard %q, want %q", got, uris)
	}
	first := time.Now()
	st.set("a", 1, "a1 once more")
	st.set("a", 2, "a2 once more")
	a.Changed("items")
	waitFor(t, a, func(s LiveStats) bool { return s.Delayed == 2 })
	waitIdle(t, a)
	notes := ra.all()
	if len(notes) != 2 {
		t.Fatalf("a heard %d more notifications, want 2", len(notes))
	}
	for _, n := range notes {
		if gap := n.at.Sub(first); gap < every-50*time.Millisecond {
			t.Errorf("a heard %s %v after the first notifications, want the interval", n.uri, gap)
		}
	}
	if heard := rb.all(); len(heard) != 0 {
		t.Errorf("b heard %d notifications, want none", len(heard))
	}
	if batches.Load() == 0 {
		t.Error("the re-runs did not use the batch form")
	}
}

// A delayed notification whose query is dropped (its subscriber left)
// leaves nothing waiting: WaitIdle returns without waiting for the
// interval, and the timer is stopped.
func TestPaceDroppedWhileDelayed(t *testing.T) {
	st := newTickerStore()
	a := newPacedServer(t, st, time.Hour)
	f := newFakeClient(t, a, "s1", 64)
	const uri = "app://ticker_show/1"
	if err := f.subscribe(uri); err != nil {
		t.Fatal(err)
	}
	// The first change is announced at once, the second delayed.
	st.items.set(1, "v2")
	a.Changed("items/1")
	waitIdle(t, a)
	st.items.set(1, "v3")
	a.Changed("items/1")
	waitFor(t, a, func(s LiveStats) bool { return s.Delayed == 1 })
	if err := f.unsubscribe(uri); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, a) // within 10 s, not an hour
	a.live.mu.Lock()
	armed, due, fires := a.live.pacer.armed, len(a.live.pacer.due), a.live.pacer.fires
	a.live.mu.Unlock()
	if armed || due != 0 || fires != 0 {
		t.Errorf("after the drop: pacer armed %v, %d due, %d callbacks scheduled", armed, due, fires)
	}
	if got := len(f.notes()); got != 1 {
		t.Errorf("%d notifications, want the first change's only", got)
	}
}

// Close sends the notifications still delayed before it ends the
// subscriptions, and leaves no timer or goroutine behind.
func TestPaceClose(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newTickerStore()
	rec := &recorder{}
	a := newPacedServer(t, st, time.Hour, WithObserver(rec))
	f := newFakeClient(t, a, "s1", 64)
	const uri = "app://ticker_show/1"
	if acked, _ := f.listen(t, uri); len(acked) != 1 {
		t.Fatalf("acknowledged %q", acked)
	}
	// The first change is announced at once, the second delayed.
	st.items.set(1, "v2")
	a.Changed("items/1")
	waitIdle(t, a)
	st.items.set(1, "v3")
	a.Changed("items/1")
	waitFor(t, a, func(s LiveStats) bool { return s.Delayed == 1 })
	if n := len(rec.take(OpNotify)); n != 1 {
		t.Errorf("%d notification batches told before Close, want 1", n)
	}
	reruns := rec.take(OpRerun)
	if len(reruns) != 2 || reruns[1].outcome != OutcomeChanged {
		t.Errorf("re-runs %d, the delayed one's outcome %q; want 2, changed", len(reruns), reruns[len(reruns)-1].outcome)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(f.notes()); got != 2 {
		t.Errorf("%d notifications by the end of Close, want 2: the delayed one too", got)
	}
	if told := rec.take(OpNotify); len(told) != 1 || told[0].op.Count != 1 || told[0].op.Command != "ticker_show" {
		t.Errorf("delayed notifications told: %+v, want one batch of 1 for ticker_show", told)
	}
	f.close()
}

// The pacer's heap gives the delayed queries in the order they are due,
// whatever was pushed and removed.
func TestPacerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var p pacer
		var in []*query
		for range rng.IntN(40) {
			switch {
			case len(in) > 0 && rng.IntN(3) == 0:
				i := rng.IntN(len(in))
				p.remove(in[i].pace.at - 1)
				in = slices.Delete(in, i, i+1)
			default:
				q := &query{pace: &queryPace{due: time.Duration(rng.IntN(20))}}
				p.push(q)
				in = append(in, q)
			}
		}
		for i, q := range p.due {
			if q.pace.at != i+1 {
				t.Fatalf("round %d: the query at %d says it is at %d", round, i, q.pace.at-1)
			}
		}
		var got []time.Duration
		for len(p.due) > 0 {
			got = append(got, p.due[0].pace.due)
			p.remove(0)
		}
		if len(got) != len(in) || !slices.IsSorted(got) {
			t.Fatalf("round %d: popped %v of %d", round, got, len(in))
		}
	}
}
