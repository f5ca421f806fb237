package adapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/time/rate"

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
