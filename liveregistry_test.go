package adapter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/time/rate"

	"github.com/mcplive/adapter/internal/draw"
	"github.com/mcplive/adapter/internal/leakcheck"
	"github.com/mcplive/adapter/middleware"
)

func TestReadsMatching(t *testing.T) {
	ix := newReadIndex()
	table := &query{}
	row12 := &query{}
	row13 := &query{}
	both := &query{}
	blind := &query{}
	ix.add(table, []string{"customers"})
	ix.add(row12, []string{"customers/12"})
	ix.add(row13, []string{"customers/13"})
	ix.add(both, []string{"customers/12", "orders"})
	ix.add(blind, nil)
	names := map[*query]string{table: "table", row12: "row12", row13: "row13", both: "both", blind: "blind"}
	affected := func(key string) []string {
		seen := map[string]bool{}
		ix.affected(key, func(q *query, _ uint64) { seen[names[q]] = true })
		var out []string
		for n := range seen {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	for key, want := range map[string][]string{
		"customers":     {"blind", "both", "row12", "row13", "table"},
		"customers/12":  {"blind", "both", "row12", "table"},
		"customers/13":  {"blind", "row13", "table"},
		"customers/14":  {"blind", "table"},
		"orders":        {"blind", "both"},
		"orders/1":      {"blind", "both"},
		"invoices":      {"blind"},
		"customers/1/x": {"blind", "table"},
	} {
		if got := affected(key); !slices.Equal(got, want) {
			t.Errorf("change %q affects %v, want %v", key, got, want)
		}
	}
	for q, reads := range map[*query][]string{table: {"customers"}, row12: {"customers/12"}, row13: {"customers/13"}, both: {"customers/12", "orders"}, blind: nil} {
		ix.remove(q, reads)
	}
	if len(ix.exact)+len(ix.table)+len(ix.blind) != 0 {
		t.Fatalf("index not empty after removing everything: %+v", ix)
	}
}

func TestReadsOutsideARun(t *testing.T) {
	Reads(context.Background(), "customers") // no recorder: nothing happens
	ctx, rec := withReadRecorder(context.Background())
	Reads(ctx, "b", "", "a", "b")
	if got := rec.finish([]string{"c", "a"}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("read set %v", got)
	}
	Reads(ctx, "late") // after the run: ignored
	if slices.Contains(rec.keys, "late") {
		t.Fatalf("late read recorded")
	}
}

// gatedStore holds one value whose reads can be held at a gate, so that a
// test can act while a run is under way.
type gatedStore struct {
	mu      sync.Mutex
	value   string
	gate    chan struct{} // when set, a run waits for it after reading
	entered chan struct{} // a run signals here when it waits
	runs    atomic.Int64
	origins sync.Map // middleware.Origin -> *atomic.Int64
}

func (g *gatedStore) read(ctx context.Context) string {
	Reads(ctx, "value")
	g.runs.Add(1)
	g.mu.Lock()
	v, gate, entered := g.value, g.gate, g.entered
	g.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	return v
}

func (g *gatedStore) hold() (entered, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate, g.entered = make(chan struct{}), make(chan struct{}, 16)
	return g.entered, g.gate
}

func (g *gatedStore) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate, g.entered = nil, nil
}

func (g *gatedStore) set(v string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.value = v
}

func (g *gatedStore) countOrigins(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, call *middleware.Call) (any, error) {
		n, _ := g.origins.LoadOrStore(call.Origin, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		if call.Origin != middleware.OriginFrom(ctx) {
			panic("origin of the call and of the context differ")
		}
		return next(ctx, call)
	}
}

func (g *gatedStore) origin(o middleware.Origin) int64 {
	n, ok := g.origins.Load(o)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

type keyArgs struct {
	K string `json:"k"`
}

func newGatedServer(t testingT, g *gatedStore, opts ...Option) *Adapter {
	a := newLiveServer(t, newItemStore(3), append([]Option{WithMiddleware(g.countOrigins)}, opts...)...)
	Live(a, "value_get", "The value.", func(ctx context.Context, args keyArgs) (string, error) {
		return g.read(ctx) + args.K, nil
	})
	return a
}

func TestLiveNoLostWakeup(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	g := &gatedStore{value: "a"}
	a := newGatedServer(t, g)
	f := newFakeClient(t, a, "s1", 100)
	if err := f.subscribe("app://value_get/x"); err != nil {
		t.Fatal(err)
	}
	if got := g.origin(middleware.Agent); got != 1 {
		t.Fatalf("first run: %d runs as agent, want 1", got)
	}

	// Hold the re-run after it read "b"; meanwhile the value changes again
	// and Changed is called many times: exactly one more run follows, and
	// it sees "c".
	entered, release := g.hold()
	g.set("b")
	a.Changed("value")
	<-entered
	g.set("c")
	for range 100 {
		a.Changed("value")
	}
	if s := a.LiveStats(); s.Running != 1 {
		t.Fatalf("running %d, want the one held run (%+v)", s.Running, s)
	}
	g.open()
	close(release)
	waitIdle(t, a)

	if got := g.origin(middleware.Live); got != 2 {
		t.Fatalf("%d re-runs, want 2: the held one and one more for the changes during it", got)
	}
	// Two results ("bx", then "cx"), but the second may coalesce with the
	// first if it was not delivered yet: at least one notification, at most
	// two, and the last digest is that of "cx".
	got := f.take()
	if len(got) < 1 || len(got) > 2 {
		t.Fatalf("notifications %v", got)
	}
	f.close()
	waitEmpty(t, a)
}

func TestLiveChangeDuringFirstRun(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	g := &gatedStore{value: "a"}
	a := newGatedServer(t, g)
	f := newFakeClient(t, a, "s1", 100)

	entered, release := g.hold()
	done := make(chan *mcp.JSONRPCErrorDetails)
	go func() { done <- f.subscribe("app://value_get/x") }()
	<-entered // the first run read "a" and waits
	g.set("b")
	a.Changed("value") // the query is not filed yet: it must still hear this
	g.open()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitIdle(t, a)
	if got := g.origin(middleware.Live); got != 1 {
		t.Fatalf("%d re-runs after a change during the first run, want 1", got)
	}
	if got := f.take(); !slices.Equal(got, []string{"app://value_get/x"}) {
		t.Fatalf("notifications %v, want one: the first run saw the old value", got)
	}
}

func TestLiveSharedQueryAndSpellings(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(3)
	a := newLiveServer(t, st)
	f1 := newFakeClient(t, a, "s1", 100)
	f2 := newFakeClient(t, a, "s2", 100)
	for _, u := range []string{"app://items_count", "app://items_count?min=1", "app://items_count?min=%31"} {
		if err := f1.subscribe(u); err != nil {
			t.Fatalf("%s: %+v", u, err)
		}
	}
	acked, stop := f2.listen(t, "app://items_count?min=1", "app://items_show/2")
	if len(acked) != 2 {
		t.Fatalf("acknowledged %v", acked)
	}
	if s := a.LiveStats(); s.Queries != 3 || s.Subscriptions != 5 || s.Sessions != 2 {
		// items_count{}, items_count{min:1} (three spellings), items_show{2}
		t.Fatalf("stats %+v", s)
	}
	base := a.LiveStats().Reruns
	st.set(4, "new")
	a.Changed("items/4") // a row: the count re-runs (it read the table), items_show/2 does not
	waitIdle(t, a)
	if got := a.LiveStats().Reruns - base; got != 2 {
		t.Fatalf("%d re-runs, want 2 (one per distinct count query)", got)
	}
	if got, want := f1.take(), []string{"app://items_count", "app://items_count?min=%31", "app://items_count?min=1"}; !slices.Equal(got, want) {
		t.Fatalf("s1 heard %v, want %v", got, want)
	}
	if got, want := f2.take(), []string{"app://items_count?min=1"}; !slices.Equal(got, want) {
		t.Fatalf("s2 heard %v, want %v", got, want)
	}

	// Unsubscribing spellings one by one drops the query with the last.
	for _, u := range []string{"app://items_count", "app://items_count?min=1", "app://items_count?min=%31", "app://never-subscribed"} {
		if err := f1.unsubscribe(u); err != nil {
			t.Fatalf("unsubscribe %s: %+v", u, err)
		}
	}
	if s := a.LiveStats(); s.Queries != 2 || s.Subscriptions != 2 || s.Sessions != 1 {
		t.Fatalf("stats after unsubscribing %+v", s)
	}
	stop()
	f2.close()
	f1.close()
	waitEmpty(t, a)
}

func TestLiveReadSetFollowsTheData(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(3)
	a := newLiveServer(t, st)
	// items_follow shows the item whose id item 1 holds: it reads both.
	Live(a, "items_follow", "The item item 1 points at.", func(ctx context.Context, _ struct{}) (string, error) {
		Reads(ctx, "items/1")
		ptr, _ := st.get(1)
		Reads(ctx, "items/"+ptr)
		var id int
		fmt.Sscan(ptr, &id)
		v, _ := st.get(id)
		return v, nil
	})
	st.set(1, "2")
	f := newFakeClient(t, a, "s1", 100)
	if err := f.subscribe("app://items_follow"); err != nil {
		t.Fatal(err)
	}
	st.set(3, "three")
	a.Changed("items/3") // not read yet
	waitIdle(t, a)
	if got := f.take(); len(got) != 0 {
		t.Fatalf("heard %v for a row it did not read", got)
	}
	st.set(1, "3")
	a.Changed("items/1")
	waitIdle(t, a)
	if got := f.take(); len(got) != 1 {
		t.Fatalf("heard %v, want one notification", got)
	}
	st.set(3, "THREE")
	a.Changed("items/3") // read now
	waitIdle(t, a)
	if got := f.take(); len(got) != 1 {
		t.Fatalf("heard %v, want one notification after the read set moved", got)
	}
	st.set(2, "two")
	a.Changed("items/2") // not read any more
	waitIdle(t, a)
	if got := f.take(); len(got) != 0 {
		t.Fatalf("heard %v for a row it no longer reads", got)
	}
}

func TestLiveFailureIsAChange(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(3)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "s1", 100)
	if err := f.subscribe("app://items_show/2"); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	delete(st.items, 2)
	st.mu.Unlock()
	a.Changed("items/2")
	waitIdle(t, a)
	if got := f.take(); len(got) != 1 {
		t.Fatalf("heard %v when the item vanished, want one notification", got)
	}
	a.Changed("items/2") // still gone: the same error, no notification
	waitIdle(t, a)
	if got := f.take(); len(got) != 0 {
		t.Fatalf("heard %v for the same failure", got)
	}
	st.set(2, "back")
	a.Changed("items/2")
	waitIdle(t, a)
	if got := f.take(); len(got) != 1 {
		t.Fatalf("heard %v when the item came back", got)
	}
}

func TestLiveSubscribeErrors(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(3)
	a := newLiveServer(t, st,
		WithRateLimit(rate.Every(time.Hour), 2),
		WithGrant(func(_ context.Context, name string) bool { return name != "items_count" }))
	Command(a, "items_set", "Writes.", func(context.Context, itemArgs) (bool, error) { return true, nil })
	a.Server().AddResource(mcp.NewResource("app://static", "static"), nil)
	f := newFakeClient(t, a, "s1", 100)

	for uri, code := range map[string]int{
		"app://nope":             mcp.RESOURCE_NOT_FOUND,
		"app://items_count":      mcp.RESOURCE_NOT_FOUND, // not granted: as if it did not exist
		"app://items_set/1":      mcp.RESOURCE_NOT_FOUND, // a command that writes has no template
		"app://items_show/x":     mcp.INVALID_PARAMS,
		"app://items_show/0":     mcp.INVALID_PARAMS,
		"app://items_show/1/2":   mcp.RESOURCE_NOT_FOUND,
		"app://%69tems_show/1":   mcp.RESOURCE_NOT_FOUND,
		"app://items_show/99":    0, // ErrNotFound on the first run: watched until it exists
		"app://items_show/1":     0,
		"app://items_show/1#top": mcp.RESOURCE_NOT_FOUND,
		"file:///elsewhere":      0, // not the adapter's: left to mcp-go
		"app://static":           0, // the user's own resource in the scheme
	} {
		err := f.subscribe(uri)
		switch {
		case code == 0 && err != nil:
			t.Errorf("subscribe %s: %+v", uri, err)
		case code != 0 && (err == nil || err.Code != code):
			t.Errorf("subscribe %s: %+v, want code %d", uri, err, code)
		}
	}
	// The first run counts against the rate limit (burst 2: items_show/99
	// and items_show/1 took it), re-runs do not.
	err := f.subscribe("app://items_show/2")
	if err == nil || err.Code != middleware.CodeRateLimited {
		t.Fatalf("subscribe beyond the rate limit: %+v", err)
	}
	for i := range 5 {
		st.set(1, fmt.Sprint(i))
		a.Changed("items/1")
		waitIdle(t, a)
	}
	if got := f.take(); len(got) != 5 {
		t.Fatalf("heard %v, want 5 notifications from re-runs exempt from the rate limit", got)
	}

	// A modern listen leaves the same URIs out of the acknowledgement.
	g := newFakeClient(t, a, "s2", 100)
	acked, stop := g.listen(t, "app://nope", "app://items_count", "app://items_show/x", "file:///elsewhere")
	defer stop()
	if !slices.Equal(acked, []string{"file:///elsewhere"}) {
		t.Fatalf("acknowledged %v", acked)
	}
}

func TestLiveLegacyNeedsALastingSession(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	a := newLiveServer(t, newItemStore(3))
	// A session that was never registered, as stateless legacy HTTP serves
	// each request: nothing would ever end its subscriptions.
	f := &fakeClient{a: a, s: &fakeSession{id: "", ch: make(chan mcp.JSONRPCNotification, 1)}}
	if err := f.subscribe("app://items_show/1"); err == nil || err.Code != mcp.INVALID_REQUEST {
		t.Fatalf("subscribe without a session: %+v", err)
	}
	waitEmpty(t, a)
}

func TestLiveChangeFeed(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	feed := &fakeFeed{}
	st := newItemStore(3)
	a := newLiveServer(t, st, WithChangeFeed(feed))
	if feed.sink == nil {
		t.Fatal("Wrap did not attach the feed")
	}
	f := newFakeClient(t, a, "s1", 100)
	for _, u := range []string{"app://items_show/1", "app://items_count"} {
		if err := f.subscribe(u); err != nil {
			t.Fatal(err)
		}
	}
	st.set(1, "local")
	a.Changed("items/1")
	waitIdle(t, a)
	if got := feed.published(); len(got) != 1 || !slices.Equal(got[0], []string{"items/1"}) {
		t.Fatalf("published %v", got)
	}
	// Changes from elsewhere re-run locally and are not published again.
	st.set(1, "remote")
	feed.sink.Changed("items/1")
	waitIdle(t, a)
	base := a.LiveStats().Reruns
	feed.sink.ChangedAll()
	waitIdle(t, a)
	if got := a.LiveStats().Reruns - base; got != 2 {
		t.Fatalf("ChangedAll: %d re-runs, want every query once", got)
	}
	if got := feed.published(); len(got) != 1 {
		t.Fatalf("published %v: changes from the feed went back out", got)
	}
	if got := f.take(); !slices.Equal(got, []string{"app://items_show/1", "app://items_show/1"}) {
		t.Fatalf("heard %v, want the local and the remote change", got)
	}
	feed.fail.Store(true)
	a.Changed("items/1") // logged, not fatal
}

type fakeFeed struct {
	sink ChangeSink
	mu   sync.Mutex
	pub  [][]string
	fail atomic.Bool
}

func (f *fakeFeed) Attach(sink ChangeSink) { f.sink = sink }

func (f *fakeFeed) Publish(_ context.Context, keys []string) error {
	if f.fail.Load() {
		return errors.New("feed down")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pub = append(f.pub, keys)
	return nil
}

func (f *fakeFeed) published() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pub)
}

func TestLiveStreamEndFreesItsSubscriptions(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	a := newLiveServer(t, newItemStore(5), WithSubscriptionCap(3))
	f := newFakeClient(t, a, "s1", 100)
	// On a session, streams and legacy subscriptions share the cap.
	if err := f.subscribe("app://items_show/1"); err != nil {
		t.Fatal(err)
	}
	acked1, stop1 := f.listen(t, "app://items_show/2", "app://items_show/3")
	_, stop2 := f.listen(t, "app://items_show/4")
	if len(acked1) != 2 {
		t.Fatalf("acknowledged %v", acked1)
	}
	if s := a.LiveStats(); s.Subscriptions != 3 {
		t.Fatalf("stats %+v: the second stream is beyond the cap", s)
	}
	stop1()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool { return a.live.subs == 1 && len(a.live.listens) == 0 }); err != nil {
		t.Fatalf("stream end left %+v", a.LiveStats())
	}
	stop2()
	f.close() // unregistering frees the legacy subscription
	waitEmpty(t, a)
}

// A first run that fails with ErrNotFound still subscribes: the watch hears
// when the thing comes to exist.
func TestLiveWatchesWhatDoesNotExistYet(t *testing.T) {
	st := newItemStore(3)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "s1", 100)
	if err := f.subscribe("app://items_show/999"); err != nil {
		t.Fatalf("subscribe to a missing item: %+v, want it acknowledged", err)
	}
	a.Changed("items/999") // nothing changed yet: still not found
	waitIdle(t, a)
	if got := f.take(); len(got) != 0 {
		t.Fatalf("notified %v before the item exists", got)
	}
	st.set(999, "new")
	a.Changed("items/999")
	waitIdle(t, a)
	if got := f.take(); !slices.Equal(got, []string{"app://items_show/999"}) {
		t.Fatalf("after creating item 999: %v, want one notification", got)
	}
}

func TestSortReached(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		n    int
		seq  func(i int) uint64
	}{
		{"empty", 0, nil},
		{"few, by comparison", radixMin - 1, func(i int) uint64 { return uint64(i) * 7 }},
		{"dense, one byte", 200, func(i int) uint64 { return 1 + uint64(i) }},
		{"dense, two bytes", 5000, func(i int) uint64 { return 1 + uint64(i) }},
		{"dense, far from zero", 1000, func(i int) uint64 { return 1<<40 + uint64(i) }},
		{"sparse, every byte", 1000, func(int) uint64 { return rng.Uint64() }},
		{"top byte only", 300, func(i int) uint64 { return uint64(i%256) << 56 }},
		{"equal seqs", 100, func(int) uint64 { return 42 }},
	}
	var buf []reached
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := make([]reached, tt.n)
			for i := range rs {
				rs[i] = reached{seq: tt.seq(i), key: string(rune('a' + i%26))}
			}
			rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			want := slices.Clone(rs)
			slices.SortStableFunc(want, bySeq)
			sorted, scratch := sortReached(rs, buf)
			if len(sorted) != tt.n {
				t.Fatalf("%d entries, want %d", len(sorted), tt.n)
			}
			for i := range sorted {
				if sorted[i].seq != want[i].seq {
					t.Fatalf("entry %d: seq %d, want %d", i, sorted[i].seq, want[i].seq)
				}
			}
			// By radix, the sort is stable: the very entries, in order.
			if tt.n >= radixMin && !slices.Equal(sorted, want) {
				t.Fatal("radix sort lost, changed or reordered an entry")
			}
			if tt.n > 0 && len(scratch) > 0 && &scratch[0] == &sorted[0] {
				t.Fatal("scratch is the sorted array")
			}
			buf = scratch[:0]
		})
	}
}

func FuzzSortReached(f *testing.F) {
	f.Add(uint64(1), uint64(1000), 200)
	f.Add(uint64(1<<63), uint64(1<<62), 70)
	f.Fuzz(func(t *testing.T, base, spread uint64, n int) {
		n = min(max(n, 0), 3000)
		rng := rand.New(rand.NewPCG(base, spread))
		rs := make([]reached, n)
		for i := range rs {
			s := base
			if spread > 0 {
				s += rng.Uint64N(spread)
			}
			rs[i] = reached{seq: s}
		}
		sorted, _ := sortReached(slices.Clone(rs), nil)
		want := slices.Clone(rs)
		slices.SortFunc(want, bySeq)
		if !slices.Equal(sorted, want) {
			t.Fatalf("sorted %d seqs from %d over %d wrongly", n, base, spread)
		}
	})
}

// BenchmarkSortReached sorts what a change to every query of a table
// reaches, 1,000 queries made one after another, shuffled as the index
// gives them: by radix (sortReached) and by comparison.
func BenchmarkSortReached(b *testing.B) {
	src := make([]reached, 1000)
	for i := range src {
		src[i] = reached{seq: 5000 + uint64(i)}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	b.Run("radix", func(b *testing.B) {
		rs, buf := make([]reached, len(src)), []reached(nil)
		for b.Loop() {
			rs = append(rs[:0], src...)
			rs, buf = sortReached(rs, buf)
		}
	})
	b.Run("comparison", func(b *testing.B) {
		rs := make([]reached, len(src))
		for b.Loop() {
			copy(rs, src)
			slices.SortFunc(rs, bySeq)
		}
	})
}

// Changes that arrive while a query re-runs, to keys its run reads but the
// query is not filed under yet: each must be followed by a run that sees
// it (Changed: "A query that is running when its data changes runs once
// more after that run, so no change is missed").

type kArgs struct {
	K string `json:"k"`
}

// A change reported while a query re-runs, to a key that run reads but the
// query was not filed under, must be followed by a run that sees it, also
// when a second subscription to the same query, made meanwhile, refiled
// the query under the run's new read set. Otherwise the query keeps the
// stale result of the run as its state, and the next change that brings
// the data back to that stale value notifies no one, though the
// subscribers last read something else.
func TestChangeDuringRerunWhileASharedSubscriptionRefiles(t *testing.T) {
	var mu sync.Mutex
	data := map[string]string{"ptr": "a", "a": "1", "b": "1"}
	get := func(k string) string { mu.Lock(); defer mu.Unlock(); return data[k] }
	set := func(k, v string) { mu.Lock(); defer mu.Unlock(); data[k] = v }

	var armed atomic.Bool
	reached := make(chan struct{}, 1)
	gate := make(chan struct{})
	var liveRuns atomic.Int32

	a := Wrap(server.NewMCPServer("t", "1"))
	Live(a, "follow", "", func(ctx context.Context, args kArgs) (string, error) {
		Reads(ctx, "ptr")
		target := get("ptr")
		Reads(ctx, target)
		v := get(target)
		if middleware.OriginFrom(ctx) == middleware.Live {
			liveRuns.Add(1)
			if armed.CompareAndSwap(true, false) {
				reached <- struct{}{}
				<-gate
			}
		}
		return v, nil
	})
	const uri = "app://follow/x"
	c1 := newFakeClient(t, a, "s1", 64)
	if err := c1.subscribe(uri); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}

	// The re-run R reads {ptr, b} and b == "1", and waits.
	armed.Store(true)
	set("ptr", "b")
	a.Changed("ptr")
	<-reached
	// b changes while R runs; the query is still filed under {a, ptr}.
	set("b", "2")
	a.Changed("b")
	// A second session subscribes to the same query: its first run starts
	// after the change, sees b == "2", and refiles the query under
	// {b, ptr}, R's read set.
	c2 := newFakeClient(t, a, "s2", 64)
	if err := c2.subscribe(uri); err != nil {
		t.Fatalf("second subscribe: %+v", err)
	}
	close(gate) // R returns "1", which predates the change of b
	waitIdle(t, a)
	runsAfterR := liveRuns.Load() - 1
	c1.take()
	c2.take()

	// Both subscribers have now seen "2" (c1 was notified of the first
	// run of c2, and c2 ran it). b goes back to "1": a change of what they
	// read.
	set("b", "1")
	a.Changed("b")
	waitIdle(t, a)
	if len(c1.take()) == 0 || len(c2.take()) == 0 {
		t.Fatalf("b went from 2 to 1 and a subscriber heard nothing: the change of b during the re-run was never re-run (live re-runs after R, before this change: %d; want 1)", runsAfterR)
	}
}

// "A query that is running when its data changes runs once more after that
// run, so no change is missed" (Changed). That holds for a run that
// outlives its deadline too: it read b, b changed while it ran, so the
// query must run once more. The late run is discarded and the query stays
// filed under its old read set, which does not have b: the change of b is
// lost, and the subscriber is never told that its result went from 1 to 3.
func TestChangeDuringALateRerun(t *testing.T) {
	var mu sync.Mutex
	data := map[string]string{"ptr": "a", "a": "1", "b": "2"}
	get := func(k string) string { mu.Lock(); defer mu.Unlock(); return data[k] }
	set := func(k, v string) { mu.Lock(); defer mu.Unlock(); data[k] = v }

	var armed atomic.Bool
	reached := make(chan struct{}, 1)
	gate := make(chan struct{})
	a := Wrap(server.NewMCPServer("t", "1"), WithRerunTimeout(50*time.Millisecond))
	Live(a, "follow", "", func(ctx context.Context, args kArgs) (string, error) {
		Reads(ctx, "ptr")
		target := get("ptr")
		Reads(ctx, target)
		v := get(target)
		if middleware.OriginFrom(ctx) == middleware.Live && armed.CompareAndSwap(true, false) {
			reached <- struct{}{}
			<-gate
			<-ctx.Done() // outlive the deadline
		}
		return v, nil
	})
	const uri = "app://follow/x"
	c := newFakeClient(t, a, "s1", 64)
	if err := c.subscribe(uri); err != nil { // "1", read set {a, ptr}
		t.Fatalf("subscribe: %+v", err)
	}

	armed.Store(true)
	set("ptr", "b")
	a.Changed("ptr")
	<-reached // R has read {ptr, b} and b == "2"
	set("b", "3")
	a.Changed("b") // the data R reads changed while it runs
	close(gate)    // R outlives its deadline
	waitIdle(t, a)
	if late := a.LiveStats().Late; late != 1 {
		t.Fatalf("Late %d, want 1", late)
	}
	if got := c.take(); len(got) == 0 {
		t.Fatalf("no notification, though the subscription's result went from 1 to %s and the change of b came while the query ran; stats %+v", get("b"), a.LiveStats())
	}
}

// TestLiveModel interleaves, at random, subscriptions (legacy and listen
// streams), unsubscriptions, writes that change results or not, stream
// ends, disconnects and reading of notifications, while re-runs and
// deliveries run in the background. Its clients behave as agents do: they
// read a URI when they subscribe to it and again whenever they hear it
// changed. At the end, once the registry is idle and every notification has
// been read, every live subscription's last read must equal what a read
// returns now (no change went unnoticed), and after everyone disconnects
// the registry must hold nothing and leave no goroutine behind.
//
// It runs the cases of seeds 1 to checks, of modelMeanSteps actions on
// average; FuzzLiveModel runs the sequences the fuzzer makes up.
func TestLiveModel(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	draw.ForEachSeed(t, checks, runLiveModel)
}

// FuzzLiveModel runs TestLiveModel's model on the sequences of actions the
// fuzzer's bytes decide, up to modelMaxFuzzBytes of them.
func FuzzLiveModel(f *testing.F) {
	f.Add([]byte{})
	// Client 0 subscribes to items_show/1, which is written, and reads;
	// client 1 listens to items_count and items_show/%31, the table is
	// written, client 1 ends its stream, client 2 reconnects, client 1
	// reads.
	f.Add([]byte{6, 0, 2, 8, 0, 1, 0, 4, 0, 3, 1, 1, 0, 2, 8, 2, 2, 1, 1, 1, 5, 2, 4, 1})
	f.Add([]byte("the registry must not lose a wake-up, whatever the order of things"))
	draw.AddRandomInputs(f, 2, 200)
	f.Fuzz(func(t *testing.T, data []byte) {
		defer leakcheck.VerifyNone(t, leakcheck.Current())
		runLiveModel(t, draw.FromBytes(data[:min(len(data), modelMaxFuzzBytes)]))
	})
}

const (
	modelItems    = 4
	modelSessions = 3
	// modelMeanSteps is the average number of actions of a seeded case
	// (rapid's Repeat default, which this test used before).
	modelMeanSteps = 30
	// modelMaxFuzzBytes bounds a fuzz case: every action takes a byte.
	modelMaxFuzzBytes = 512
)

var modelURIs = func() []string {
	uris := []string{"app://items_count", "app://items_count?min=1"}
	for i := 1; i <= modelItems+1; i++ { // one more than exists at first
		uris = append(uris, fmt.Sprintf("app://items_show/%d", i), fmt.Sprintf("app://items_show/%%3%d", i))
	}
	return uris
}()

// runLiveModel runs one case: the invariant before the first action and
// after each, then the final checks.
func runLiveModel(t *testing.T, c *draw.Choices) {
	m := newLiveModel(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the actions of this case:\n%s", strings.Join(m.actions, "\n"))
		}
	})
	m.check()
	for c.Another(modelMeanSteps) {
		for !m.step() {
		}
		m.check()
	}
	m.finish()
}

// subKey names one subscription as its client sees it: the URI and the
// stream ("" for resources/subscribe).
type subKey struct {
	uri    string
	stream string
}

type modelClient struct {
	f       *fakeClient
	gen     int
	streams map[string]func() // open listen streams by subscription id
	subs    map[subKey]string // live subscriptions and what the client last read
}

type liveModel struct {
	t       *testing.T
	c       *draw.Choices
	st      *itemStore
	a       *Adapter
	clients []*modelClient
	actions []string // what the case did, for its failure report
}

func newLiveModel(t *testing.T, c *draw.Choices) *liveModel {
	st := newItemStore(modelItems)
	m := &liveModel{t: t, c: c, st: st, a: newLiveServer(t, st, WithSubscriptionCap(8))}
	for i := range modelSessions {
		m.clients = append(m.clients, m.connect(i, 0))
	}
	return m
}

func (m *liveModel) connect(i, gen int) *modelClient {
	return &modelClient{
		f:       newFakeClient(m.t, m.a, fmt.Sprintf("s%d-%d", i, gen), 1000),
		gen:     gen,
		streams: map[string]func(){},
		subs:    map[subKey]string{},
	}
}

func (m *liveModel) logf(format string, args ...any) {
	m.actions = append(m.actions, fmt.Sprintf(format, args...))
}

// step runs one action, each as likely as the others, and reports whether
// it applied; one that does not (ending a stream when none is open) is
// drawn again, as rapid did. Action 0 always applies: used-up fuzz bytes
// choose it.
func (m *liveModel) step() bool {
	switch m.c.Intn(9) {
	case 0:
		m.delete()
	case 1:
		return m.endStream()
	case 2:
		m.idle()
	case 3:
		m.listen()
	case 4:
		m.read()
	case 5:
		m.reconnect()
	case 6:
		m.subscribe()
	case 7:
		m.unsubscribe()
	default:
		m.write()
	}
	return true
}

// check is the invariant that holds between any two actions.
func (m *liveModel) check() {
	s := m.a.LiveStats()
	if s.Pending > s.Subscriptions {
		m.t.Fatalf("%d notifications pending for %d subscriptions", s.Pending, s.Subscriptions)
	}
}

// current is what reading uri returns now.
func (m *liveModel) current(uri string) string {
	if uri == "app://items_count" || uri == "app://items_count?min=1" {
		return fmt.Sprint(m.st.count())
	}
	var id int
	if _, err := fmt.Sscanf(uri, "app://items_show/%d", &id); err != nil {
		fmt.Sscanf(uri, "app://items_show/%%3%d", &id)
	}
	if v, ok := m.st.get(id); ok {
		return v
	}
	return "not found"
}

func (m *liveModel) client() (int, *modelClient) {
	i := m.c.Intn(modelSessions)
	return i, m.clients[i]
}

func (m *liveModel) subscribe() {
	i, c := m.client()
	uri := draw.Pick(m.c, modelURIs)
	m.logf("client %d: subscribe %s", i, uri)
	k := subKey{uri: uri}
	_, had := c.subs[k]
	if err := c.f.subscribe(uri); err == nil && !had {
		// The first run saw the store as it is: writes are actions of
		// their own. Subscribing again changes nothing.
		c.subs[k] = m.current(uri)
	}
}

func (m *liveModel) listen() {
	i, c := m.client()
	uris := draw.Distinct(m.c, modelURIs, 1, 4)
	m.logf("client %d: listen %v", i, uris)
	acked, id, stop := c.f.listenID(m.t, uris...)
	if len(acked) == 0 {
		stop()
		return
	}
	c.streams[id] = stop
	for _, uri := range acked {
		c.subs[subKey{uri: uri, stream: id}] = m.current(uri)
	}
}

func (m *liveModel) unsubscribe() {
	i, c := m.client()
	uri := draw.Pick(m.c, modelURIs)
	m.logf("client %d: unsubscribe %s", i, uri)
	if err := c.f.unsubscribe(uri); err != nil {
		m.t.Fatalf("unsubscribe %s: %+v", uri, err)
	}
	delete(c.subs, subKey{uri: uri})
}

func (m *liveModel) endStream() bool {
	i, c := m.client()
	if len(c.streams) == 0 {
		return false
	}
	ids := make([]string, 0, len(c.streams))
	for id := range c.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := draw.Pick(m.c, ids)
	m.logf("client %d: end stream %s", i, id)
	c.streams[id]()
	delete(c.streams, id)
	for k := range c.subs {
		if k.stream == id {
			delete(c.subs, k)
		}
	}
	return true
}

func (m *liveModel) write() {
	id := m.c.IntRange(1, modelItems+1)
	v := draw.Pick(m.c, []string{"a", "b", "c"})
	table := m.c.Bool()
	m.logf("write items/%d = %s, report the table: %v", id, v, table)
	m.st.set(id, v)
	if table {
		m.a.Changed("items")
	} else {
		m.a.Changed(fmt.Sprintf("items/%d", id))
	}
}

func (m *liveModel) delete() {
	id := m.c.IntRange(1, modelItems+1)
	m.logf("delete items/%d", id)
	m.st.mu.Lock()
	delete(m.st.items, id)
	m.st.mu.Unlock()
	m.a.Changed(fmt.Sprintf("items/%d", id))
}

// read makes one client read its notifications, and read each URI it
// heard. It reads once the registry is idle: a notification says that the
// result differs from the one last reported, and a read at any other time
// may see a state that a burst of changes then coalesces away (see
// docs/watching.md).
func (m *liveModel) read() {
	i, c := m.client()
	m.logf("client %d: read", i)
	m.waitIdle()
	m.note(c, c.f.notes())
}

func (m *liveModel) note(c *modelClient, notes []note) {
	for _, n := range notes {
		k := subKey{uri: n.uri, stream: n.subID}
		if _, live := c.subs[k]; live {
			c.subs[k] = m.current(n.uri)
		}
	}
}

func (m *liveModel) idle() {
	m.logf("wait until idle")
	m.waitIdle()
}

func (m *liveModel) waitIdle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.a.WaitIdle(ctx); err != nil {
		m.t.Fatalf("WaitIdle: %v", err)
	}
}

// reconnect drops a client's session, with everything it held, and opens
// a new one.
func (m *liveModel) reconnect() {
	i, c := m.client()
	m.logf("client %d: reconnect", i)
	c.f.close()
	m.clients[i] = m.connect(i, c.gen+1)
}

func (m *liveModel) finish() {
	for {
		m.waitIdle()
		heard := false
		for _, c := range m.clients {
			notes := c.f.notes()
			heard = heard || len(notes) > 0
			m.note(c, notes)
		}
		if !heard {
			break
		}
	}
	held := 0
	for i, c := range m.clients {
		for k, seen := range c.subs {
			if now := m.current(k.uri); seen != now {
				m.t.Fatalf("client %d, %+v: last read %q, now %q, and no notification", i, k, seen, now)
			}
		}
		held += len(c.subs)
	}
	// Ended streams end on the server when it sees their requests end.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.a.live.waitFor(ctx, func() bool { return m.a.live.subs == held }); err != nil {
		m.t.Fatalf("registry holds %d subscriptions, the clients %d", m.a.LiveStats().Subscriptions, held)
	}
	for _, c := range m.clients {
		c.f.close()
	}
	waitEmpty(m.t, m.a)
}
