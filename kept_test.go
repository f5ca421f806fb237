package adapter

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/digest"
	"github.com/mcplive/adapter/middleware"
)

// heldStore is an itemStore whose re-runs (origin Live) can be held
// after they read, so that a test decides when a run in flight ends.
type heldStore struct {
	*itemStore
	once    sync.Once
	held    atomic.Bool
	reached chan string   // a held re-run read this value
	gate    chan struct{} // one token lets one held re-run return
}

func newHeldStore(n int) *heldStore {
	return &heldStore{itemStore: newItemStore(n), reached: make(chan string, 16), gate: make(chan struct{}, 16)}
}

// closeGate lets every held re-run return, now and from now on.
func (st *heldStore) closeGate() { st.once.Do(func() { close(st.gate) }) }

// newKeptServer serves items_show on st, whose re-runs st may hold.
func newKeptServer(t testingT, st *heldStore, opts ...Option) *Adapter {
	t.Helper()
	a := Wrap(server.NewMCPServer("kept-test", "1.0.0"), opts...)
	Live(a, "items_show", "One item.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, fmt.Sprintf("items/%d", args.ID))
		v, ok := st.get(args.ID)
		if middleware.OriginFrom(ctx) == middleware.Live && st.held.Load() {
			st.reached <- v
			<-st.gate
		}
		if !ok {
			return item{}, ErrNotFound
		}
		return item{ID: args.ID, Name: v}, nil
	})
	t.Cleanup(st.closeGate)
	return a
}

// readAnswer is one resources/read as f sends it (modern: of protocol
// 2026-07-28): the text answered and its version, or the error.
func readAnswer(t testingT, f *fakeClient, uri string, modern bool) (text, version string, rerr *mcp.JSONRPCErrorDetails) {
	t.Helper()
	params := map[string]any{"uri": uri}
	if modern {
		params["_meta"] = map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "fake", "version": "1"},
		}
	}
	f.nextID++
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": f.nextID, "method": "resources/read", "params": params})
	b, _ := json.Marshal(f.a.HandleMessage(f.ctx(), raw))
	var res struct {
		Result struct {
			Meta     map[string]any `json:"_meta"`
			Contents []struct {
				Text string `json:"text"`
			} `json:"contents"`
		} `json:"result"`
		Error *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		return "", "", res.Error
	}
	if len(res.Result.Contents) != 1 {
		t.Fatalf("read %s: %s; want one content", uri, b)
	}
	v, _ := res.Result.Meta[MetaVersion].(string)
	return res.Result.Contents[0].Text, v, nil
}

// readName reads uri through f and returns the item's name.
func keptName(t testingT, f *fakeClient, uri string, modern bool) string {
	t.Helper()
	text, _, rerr := readAnswer(t, f, uri, modern)
	if rerr != nil {
		t.Fatalf("read %s: %+v", uri, rerr)
	}
	var it item
	if err := json.Unmarshal([]byte(text), &it); err != nil {
		t.Fatalf("read %s: %q: %v", uri, text, err)
	}
	return it.Name
}

// runsOf is the CommandRuns of the command named name.
func runsOf(a *Adapter, name string) CommandRuns {
	for _, r := range a.CommandRuns() {
		if r.Command == name {
			return r
		}
	}
	return CommandRuns{}
}

// After a change, the subscribers' reads are answered from the result the
// re-run computed: the command runs once for the change, not once more per
// reader, and each read answers what a run would, with the version of what
// it answers, on both protocol versions.
func TestKeptAnswersTheReadsAfterAChange(t *testing.T) {
	for _, modern := range []bool{false, true} {
		t.Run(fmt.Sprint("modern=", modern), func(t *testing.T) {
			st := newHeldStore(3)
			a := newKeptServer(t, st)
			const uri = "app://items_show/2"
			var readers []*fakeClient
			for i := range 5 {
				f := newFakeClient(t, a, fmt.Sprint("reader-", i), 16)
				if e := f.subscribe(uri); e != nil {
					t.Fatalf("subscribe: %+v", e)
				}
				readers = append(readers, f)
			}
			st.set(2, "renamed")
			a.Changed("items/2")
			waitIdle(t, a)
			before := runsOf(a, "items_show")
			for _, f := range readers {
				text, version, rerr := readAnswer(t, f, uri, modern)
				if rerr != nil || !strings.Contains(text, `"renamed"`) {
					t.Fatalf("read: %q, %+v; want the renamed item", text, rerr)
				}
				if want := versionText(digest.Content([]byte(text))); version != want {
					t.Errorf("version %q; want the content digest of what it answered, %s", version, want)
				}
			}
			after := runsOf(a, "items_show")
			if after.Read != before.Read || after.Rerun != 1 || after.Subscribe != 5 {
				t.Errorf("runs %+v after %+v; want 5 first runs, 1 re-run, and no run for the 5 reads", after, before)
			}
			if s := a.LiveStats(); s.KeptAnswers != 5 || s.Kept != 1 || s.KeptBytes != len(`{"id":2,"name":"renamed"}`) {
				t.Errorf("LiveStats %+v; want 5 reads answered from the 1 result kept", s)
			}
			// A read of a URI no one watches runs its command.
			if name := keptName(t, readers[0], "app://items_show/3", modern); name != "v1" || runsOf(a, "items_show").Read != before.Read+1 {
				t.Errorf("unwatched read: %q, runs %+v; want v1 from a run", name, runsOf(a, "items_show"))
			}
		})
	}
}

// readLater reads uri through f on a goroutine of its own: its name, once
// it is answered.
func readLater(t *testing.T, f *fakeClient, uri string) <-chan string {
	got := make(chan string, 1)
	go func() {
		text, _, rerr := readAnswer(t, f, uri, false)
		var it item
		if rerr != nil || json.Unmarshal([]byte(text), &it) != nil {
			it.Name = fmt.Sprintf("%q, %+v", text, rerr)
		}
		got <- it.Name
	}()
	return got
}

// waitingReads reports whether reads wait for a run of a query.
func waitingReads(a *Adapter) bool {
	a.live.mu.Lock()
	defer a.live.mu.Unlock()
	return len(a.live.kept.waiting) > 0
}

// eventuallyTrue waits until cond holds, checking it every millisecond,
// or fails t after 10 s saying what it waited for: for a state nothing
// announces, such as a read blocked in its wait.
func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// Changed makes what the queries it reaches keep stale before it returns:
// a read right after a write sees the write, although the re-run has not
// ended. It waits for that re-run, and is answered with its result: the
// database pays one run for the query and its readers.
func TestKeptIsStaleOnceChangedReturns(t *testing.T) {
	st := newHeldStore(1)
	a := newKeptServer(t, st)
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	if name := keptName(t, f, "app://items_show/1", false); name != "v1" || a.LiveStats().KeptAnswers != 1 {
		t.Fatalf("read %q, %+v; want v1 from the kept result", name, a.LiveStats())
	}
	st.held.Store(true)
	st.set(1, "v2")
	a.Changed("items/1")
	<-st.reached // the re-run is under way, and held
	got := readLater(t, f, "app://items_show/1")
	eventuallyTrue(t, "the read to wait for the re-run", func() bool { return waitingReads(a) })
	if s := a.LiveStats(); s.KeptAnswers != 1 {
		t.Errorf("KeptAnswers %d; want the stale result to answer nothing", s.KeptAnswers)
	}
	st.gate <- struct{}{}
	if name := <-got; name != "v2" {
		t.Errorf("a read after Changed returned answered %q; want v2", name)
	}
	if s, r := a.LiveStats(), runsOf(a, "items_show"); s.KeptAnswers != 2 || r.Read != 0 {
		t.Errorf("%+v, runs %+v; want the read answered by the re-run's result, the command not run for it", s, r)
	}
}

// A run that was under way when a change reached its query never makes
// its result current: a read waits for the run the change owes, whose
// result answers.
func TestKeptNotFromARunThatAChangeOvertook(t *testing.T) {
	st := newHeldStore(1)
	a := newKeptServer(t, st)
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	st.held.Store(true)
	st.set(1, "v2")
	a.Changed("items/1")
	if got := <-st.reached; got != "v2" {
		t.Fatalf("the re-run read %q", got)
	}
	st.set(1, "v3")
	a.Changed("items/1") // overtakes the run, which read v2
	got := readLater(t, f, "app://items_show/1")
	eventuallyTrue(t, "the read to wait", func() bool { return waitingReads(a) })
	st.gate <- struct{}{}             // the first run ends: v2, applied but not current
	if r := <-st.reached; r != "v3" { // the run the change owed
		t.Fatalf("the second re-run read %q", r)
	}
	select {
	case name := <-got:
		t.Fatalf("the read was answered %q by the run a change overtook", name)
	default:
	}
	st.gate <- struct{}{}
	if name := <-got; name != "v3" {
		t.Errorf("read %q; want v3", name)
	}
	if s, r := a.LiveStats(), runsOf(a, "items_show"); s.KeptAnswers != 1 || r.Read != 0 {
		t.Errorf("%+v, runs %+v; want the read answered by the second re-run's result", s, r)
	}
}

// A read waits for a run under way at most the re-run deadline, then runs
// the command itself; so does one whose run ends without a current result.
func TestKeptWaitIsBounded(t *testing.T) {
	st := newHeldStore(1)
	a := newKeptServer(t, st, WithRerunTimeout(50*time.Millisecond))
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	st.held.Store(true)
	st.set(1, "v2")
	a.Changed("items/1")
	<-st.reached // held past its deadline: late, not current
	if name := keptName(t, f, "app://items_show/1", false); name != "v2" {
		t.Errorf("read %q; want v2, from a run of its own", name)
	}
	if r := runsOf(a, "items_show"); r.Read != 1 {
		t.Errorf("runs %+v; want the read to run the command once the wait ran out", r)
	}
	st.gate <- struct{}{}
	waitIdle(t, a)
}

// No result crosses scopes, and a withdrawn grant refuses a read whatever
// its query keeps.
func TestKeptScopesAndGrants(t *testing.T) {
	st := newTenantStore()
	st.set("a", 1, "a's")
	st.set("b", 1, "b's")
	a := newTenantServer(t, st)
	const uri = "app://tenant_show/1"
	fa, fb := newFakeClient(t, a, "a-1", 16), newFakeClient(t, a, "b-1", 16)
	for _, f := range []*fakeClient{fa, fb} {
		if e := f.subscribe(uri); e != nil {
			t.Fatal(e)
		}
	}
	for range 3 {
		if got := keptName(t, fa, uri, false); got != "a's" {
			t.Fatalf("tenant a reads %q", got)
		}
		if got := keptName(t, fb, uri, false); got != "b's" {
			t.Fatalf("tenant b reads %q", got)
		}
	}
	if s := a.LiveStats(); s.Kept != 2 || s.KeptAnswers != 6 {
		t.Errorf("LiveStats %+v; want one result kept per tenant, answering all 6 reads", s)
	}
	st.mu.Lock()
	st.revoked["a"] = true
	st.mu.Unlock()
	if _, _, rerr := readAnswer(t, fa, uri, false); rerr == nil {
		t.Error("a read of a revoked tenant was answered")
	}
	if got := keptName(t, fb, uri, false); got != "b's" {
		t.Errorf("tenant b reads %q", got)
	}
}

// The budget bounds what is kept: the result read least recently goes
// first, a result over the largest size is never kept, and a budget of 0
// keeps nothing.
func TestKeptBudget(t *testing.T) {
	one := len(`{"id":1,"name":"v1"}`)
	uri := func(id int) string { return fmt.Sprintf("app://items_show/%d", id) }
	t.Run("evicts the least recently read", func(t *testing.T) {
		st := newHeldStore(3)
		a := newKeptServer(t, st, WithKeptResults(2*one, one))
		f := newFakeClient(t, a, "reader", 16)
		for _, id := range []int{1, 2} {
			if e := f.subscribe(uri(id)); e != nil {
				t.Fatal(e)
			}
		}
		keptName(t, f, uri(1), false) // 2 is now the least recently read
		if e := f.subscribe(uri(3)); e != nil {
			t.Fatal(e)
		}
		if s := a.LiveStats(); s.Kept != 2 || s.KeptBytes != 2*one || s.KeptEvicted != 1 {
			t.Fatalf("LiveStats %+v; want 2 kept within the budget, 1 evicted", s)
		}
		runs := runsOf(a, "items_show").Read
		keptName(t, f, uri(1), false)
		keptName(t, f, uri(3), false)
		if got := runsOf(a, "items_show").Read; got != runs {
			t.Errorf("reads of the kept results ran the command %d times", got-runs)
		}
		keptName(t, f, uri(2), false)
		if got := runsOf(a, "items_show").Read; got != runs+1 {
			t.Errorf("the read of the evicted result ran the command %d times, want 1", got-runs)
		}
	})
	t.Run("larger than the largest", func(t *testing.T) {
		st := newHeldStore(1)
		a := newKeptServer(t, st, WithKeptResults(1<<20, one-1))
		f := newFakeClient(t, a, "reader", 16)
		if e := f.subscribe(uri(1)); e != nil {
			t.Fatal(e)
		}
		keptName(t, f, uri(1), false)
		if s := a.LiveStats(); s.Kept != 0 || s.KeptAnswers != 0 || runsOf(a, "items_show").Read != 1 {
			t.Errorf("LiveStats %+v, runs %+v; want nothing kept, the read run", s, runsOf(a, "items_show"))
		}
	})
	t.Run("none", func(t *testing.T) {
		st := newHeldStore(1)
		a := newKeptServer(t, st, WithKeptResults(0, 0))
		f := newFakeClient(t, a, "reader", 16)
		if e := f.subscribe(uri(1)); e != nil {
			t.Fatal(e)
		}
		keptName(t, f, uri(1), false)
		if s := a.LiveStats(); s.Kept != 0 || s.KeptAnswers != 0 {
			t.Errorf("LiveStats %+v; want nothing kept", s)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, opt := range []Option{WithKeptResults(-1, 10), WithKeptResults(10, -1)} {
			msg := func() (msg any) {
				defer func() { msg = recover() }()
				Wrap(server.NewMCPServer("x", "1"), opt)
				return nil
			}()
			if s, _ := msg.(string); !strings.Contains(s, "kept results") {
				t.Errorf("Wrap panicked with %v; want a message naming the kept results", msg)
			}
		}
	})
}

// A query whose subscribers stop reading stops keeping: once maxUnread
// current results in a row went unread, the next is not encoded; a read
// brings keeping back for the change after.
func TestKeptOnlyWhileRead(t *testing.T) {
	st := newHeldStore(1)
	a := newKeptServer(t, st)
	f := newFakeClient(t, a, "watcher", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	step := 1 // the store holds v1
	write := func() {
		step++
		st.set(1, fmt.Sprint("v", step))
		a.Changed("items/1")
		waitIdle(t, a)
	}
	for range maxUnread {
		write()
		if s := a.LiveStats(); s.Kept != 1 {
			t.Fatalf("after change %d: %+v; want its result kept", step, s)
		}
	}
	write()
	if s := a.LiveStats(); s.Kept != 0 {
		t.Fatalf("after %d results nobody read: %+v; want nothing kept", maxUnread, s)
	}
	if name := keptName(t, f, "app://items_show/1", false); name != fmt.Sprint("v", step) {
		t.Fatalf("read %q", name)
	}
	write()
	if s := a.LiveStats(); s.Kept != 1 {
		t.Errorf("after a read and a change: %+v; want the result kept again", s)
	}
}

// WithoutKeptResults: every read of the command runs it.
func TestWithoutKeptResults(t *testing.T) {
	st := newItemStore(1)
	a := Wrap(server.NewMCPServer("kept-test", "1.0.0"))
	var runs atomic.Int64
	Live(a, "clock", "What time it is for an item.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, "items")
		runs.Add(1)
		v, _ := st.get(args.ID)
		return item{ID: args.ID, Name: v}, nil
	}, WithoutKeptResults())
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://clock/1"); e != nil {
		t.Fatal(e)
	}
	for range 3 {
		keptName(t, f, "app://clock/1", false)
	}
	if runs.Load() != 4 || a.LiveStats().Kept != 0 {
		t.Errorf("%d runs, %+v; want the subscribe and each of 3 reads to run it, nothing kept", runs.Load(), a.LiveStats())
	}
}

// hearingFeed is a change feed that says whether it hears.
type hearingFeed struct {
	hearing atomic.Bool
	sink    ChangeSink
}

func (f *hearingFeed) Attach(sink ChangeSink)                  { f.sink = sink }
func (f *hearingFeed) Publish(context.Context, []string) error { return nil }
func (f *hearingFeed) Hearing() bool                           { return f.hearing.Load() }

// deafFeed is a change feed that cannot say whether it hears.
type deafFeed struct{}

func (deafFeed) Attach(ChangeSink)                       {}
func (deafFeed) Publish(context.Context, []string) error { return nil }

// With a change feed, a kept result answers only while the feed says it
// hears every change made elsewhere, and only one computed by a run that
// began while it did; a feed that cannot say keeps nothing.
func TestKeptOnlyWhileTheFeedHears(t *testing.T) {
	feed := &hearingFeed{}
	st := newHeldStore(1)
	a := newKeptServer(t, st, WithChangeFeed(feed))
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil { // while deaf
		t.Fatal(e)
	}
	keptName(t, f, "app://items_show/1", false)
	feed.hearing.Store(true)
	keptName(t, f, "app://items_show/1", false)
	if s := a.LiveStats(); s.Kept != 1 || s.KeptAnswers != 0 {
		t.Fatalf("a result computed while the feed did not hear: %+v; want it kept, and answering nothing", s)
	}
	// A change heard from elsewhere re-runs the query, while the feed
	// hears: that result answers.
	st.set(1, "v2")
	feed.sink.Changed("items/1")
	waitIdle(t, a)
	if name := keptName(t, f, "app://items_show/1", false); name != "v2" || a.LiveStats().KeptAnswers != 1 {
		t.Fatalf("after a re-run while hearing: %q, %+v; want v2 from the kept result", name, a.LiveStats())
	}
	feed.hearing.Store(false)
	keptName(t, f, "app://items_show/1", false)
	if s := a.LiveStats(); s.KeptAnswers != 1 {
		t.Errorf("feed not hearing: %+v; want the read to run its command", s)
	}
	// A change from the feed makes it stale, as a local one does: a read
	// waits for the re-run.
	feed.hearing.Store(true)
	st.set(1, "v3")
	st.held.Store(true)
	feed.sink.Changed("items/1")
	<-st.reached
	got := readLater(t, f, "app://items_show/1")
	eventuallyTrue(t, "the read to wait for the re-run", func() bool { return waitingReads(a) })
	st.gate <- struct{}{}
	if name := <-got; name != "v3" {
		t.Errorf("after a change from the feed: %q; want v3", name)
	}
	waitIdle(t, a)

	deaf := newKeptServer(t, newHeldStore(1), WithChangeFeed(&deafFeed{}))
	g := newFakeClient(t, deaf, "reader", 16)
	if e := g.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	keptName(t, g, "app://items_show/1", false)
	if s := deaf.LiveStats(); s.Kept != 0 || s.KeptAnswers != 0 {
		t.Errorf("a feed that cannot say whether it hears: %+v; want nothing kept", s)
	}
}

// The middleware chain runs for a read answered from a kept result, and
// sees a middleware.KeptResult where the command's result would be; one
// that answers something else has that answered.
func TestKeptResultPassesTheChain(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	replace := atomic.Bool{}
	mw := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			res, err := next(ctx, call)
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %T", call.Origin, res))
			mu.Unlock()
			if _, kept := res.(middleware.KeptResult); kept && replace.Load() {
				return item{ID: 1, Name: "from the middleware"}, nil
			}
			return res, err
		}
	}
	st := newHeldStore(1)
	a := newKeptServer(t, st, WithMiddleware(mw))
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	keptName(t, f, "app://items_show/1", false)
	replace.Store(true)
	if name := keptName(t, f, "app://items_show/1", false); name != "from the middleware" {
		t.Errorf("read %q; want the middleware's answer", name)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"agent adapter.item", "agent middleware.KeptResult", "agent middleware.KeptResult"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("the chain saw %q; want %q", seen, want)
	}
}

// A tools/call of a live command is answered from the kept result of its
// query too, with the same text a run gives, structured content included.
func TestKeptAnswersToolCalls(t *testing.T) {
	st := newHeldStore(1)
	a := newKeptServer(t, st)
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	f.nextID++
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": f.nextID, "method": "tools/call",
		"params": map[string]any{"name": "items_show", "arguments": map[string]any{"id": 1}}})
	b, _ := json.Marshal(a.HandleMessage(f.ctx(), raw))
	if !strings.Contains(string(b), `"text":"{\"id\":1,\"name\":\"v1\"}"`) || !strings.Contains(string(b), `"structuredContent":{"id":1,"name":"v1"}`) {
		t.Errorf("tools/call answered %s", b)
	}
	if r := runsOf(a, "items_show"); r.Call != 0 || a.LiveStats().KeptAnswers != 1 {
		t.Errorf("runs %+v, %+v; want the call answered from the kept result", r, a.LiveStats())
	}
}

// CommandRuns counts every run of a command's function by its cause, and
// nothing for what a kept result answered.
func TestCommandRunsByCause(t *testing.T) {
	st := newHeldStore(2)
	a := newKeptServer(t, st)
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil { // subscribe
		t.Fatal(e)
	}
	keptName(t, f, "app://items_show/2", false) // read
	keptName(t, f, "app://items_show/1", false) // kept
	if e := f.call("tools/call", map[string]any{"name": "items_show", "arguments": map[string]any{"id": 2}}); e != nil {
		t.Fatal(e) // call
	}
	if _, err := a.Call(context.Background(), "items_show", map[string]any{"id": 2}); err != nil {
		t.Fatal(err) // app
	}
	st.set(1, "v2")
	a.Changed("items/1") // rerun
	waitIdle(t, a)
	if _, _, rerr := readAnswer(t, f, "app://items_show/99", false); rerr == nil { // read, not found: it ran
		t.Fatal("item 99 was found")
	}
	if got, want := runsOf(a, "items_show"), (CommandRuns{Command: "items_show", Read: 2, Call: 1, Subscribe: 1, Rerun: 1, App: 1}); got != want {
		t.Errorf("CommandRuns %+v; want %+v", got, want)
	}
}

// Versions are the content digest of what a read answers: two adapters
// (two processes of a fleet) give one result the same version, where the
// digests that tell changes apart are each process's own.
func TestVersionsAreTheSameOnEveryInstance(t *testing.T) {
	st := newHeldStore(1)
	a, b := newKeptServer(t, st), newKeptServer(t, st)
	fa, fb := newFakeClient(t, a, "a", 16), newFakeClient(t, b, "b", 16)
	if e := fa.subscribe("app://items_show/1"); e != nil { // answered from a kept result
		t.Fatal(e)
	}
	_, va, _ := readAnswer(t, fa, "app://items_show/1", true)
	_, vb, _ := readAnswer(t, fb, "app://items_show/1", true) // from a run
	if va == "" || va != vb {
		t.Errorf("versions %q and %q of one result", va, vb)
	}
	if _, err := hex.DecodeString(va); err != nil || len(va) != 32 {
		t.Errorf("version %q; want 32 hexadecimal digits", va)
	}
}

// After Close no kept result answers: nothing re-runs it any more.
func TestKeptNotAfterClose(t *testing.T) {
	st := newHeldStore(1)
	a := newKeptServer(t, st)
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st.set(1, "v2")
	if name := keptName(t, f, "app://items_show/1", false); name != "v2" {
		t.Errorf("after Close: %q; want v2 from a run", name)
	}
}

// countedResult counts its encodings: the digest's and the kept result's.
type countedResult struct {
	Name    string
	encoded *atomic.Int64
}

func (r countedResult) MarshalJSON() ([]byte, error) {
	r.encoded.Add(1)
	return json.Marshal(map[string]string{"name": r.Name})
}

// A result that is not kept (larger than the largest) is encoded for its
// version when it changes, not again by every run that finds it the same.
func TestKeptNotEncodedAgainWhenUnchanged(t *testing.T) {
	var encoded atomic.Int64
	st := newItemStore(1)
	a := Wrap(server.NewMCPServer("kept-test", "1.0.0"), WithKeptResults(1<<20, 4))
	Live(a, "items_counted", "One item.", func(ctx context.Context, args itemArgs) (countedResult, error) {
		Reads(ctx, "items")
		v, _ := st.get(args.ID)
		return countedResult{Name: v, encoded: &encoded}, nil
	})
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_counted/1"); e != nil {
		t.Fatal(e)
	}
	base := encoded.Load() // the first run: its digest and its encoding
	for range 3 {
		a.Changed("items") // nothing changed
		waitIdle(t, a)
	}
	if got := encoded.Load() - base; got != 3 {
		t.Errorf("3 runs of an unchanged result encoded it %d times; want 3, one digest each", got)
	}
	if s := a.LiveStats(); s.Kept != 0 {
		t.Errorf("%+v: a result larger than the largest was kept", s)
	}
}

// With a change feed, a request without a session (a 2026-07-28 read over
// Streamable HTTP, which a balancer sends to any instance) runs its
// command: the instance it reaches may not have heard yet the change that
// another instance notified its client of. Without a feed, it is answered
// from the kept result as any other.
func TestKeptSessionlessWithAFeed(t *testing.T) {
	sessionless := func(a *Adapter) {
		t.Helper()
		raw := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://items_show/1","_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"fake","version":"1"}}}}`)
		if b, _ := json.Marshal(a.HandleMessage(context.Background(), raw)); !strings.Contains(string(b), `\"v1\"`) {
			t.Fatalf("a sessionless read answered %s", b)
		}
	}
	for _, withFeed := range []bool{false, true} {
		feed := &hearingFeed{}
		feed.hearing.Store(true)
		var opts []Option
		if withFeed {
			opts = append(opts, WithChangeFeed(feed))
		}
		a := newKeptServer(t, newHeldStore(1), opts...)
		f := newFakeClient(t, a, "watcher", 16)
		if e := f.subscribe("app://items_show/1"); e != nil {
			t.Fatal(e)
		}
		keptName(t, f, "app://items_show/1", false) // on a session: kept
		sessionless(a)
		want := uint64(2)
		if withFeed {
			want = 1
		}
		if s := a.LiveStats(); s.KeptAnswers != want {
			t.Errorf("with a feed %v: %d reads answered from the kept result, want %d", withFeed, s.KeptAnswers, want)
		}
	}
}

// A paced command keeps its results for the reads its notifications
// cause: what counts as unread is a notification, not each change applied
// within an interval.
func TestKeptPaced(t *testing.T) {
	st := newItemStore(1)
	a := Wrap(server.NewMCPServer("kept-test", "1.0.0"))
	Live(a, "items_paced", "One item, paced.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, "items")
		v, _ := st.get(args.ID)
		return item{ID: args.ID, Name: v}, nil
	}, WithNotifyInterval(time.Hour))
	readers := make([]*fakeClient, 3)
	for i := range readers {
		readers[i] = newFakeClient(t, a, fmt.Sprint("reader-", i), 16)
		if e := readers[i].subscribe("app://items_paced/1"); e != nil {
			t.Fatal(e)
		}
	}
	for i := range 4 { // the first notifies at once; the others wait for the interval
		st.set(1, fmt.Sprint("v", i+2))
		a.Changed("items")
		if err := a.live.waitFor(t.Context(), func() bool { return a.live.workers == 0 && a.live.runq.n == 0 }); err != nil {
			t.Fatal(err)
		}
	}
	before := runsOf(a, "items_paced").Read
	for _, f := range readers {
		if name := keptName(t, f, "app://items_paced/1", false); name != "v5" {
			t.Fatalf("read %q, want v5", name)
		}
	}
	if got := runsOf(a, "items_paced").Read - before; got != 0 || a.LiveStats().KeptAnswers != 3 {
		t.Errorf("3 reads after 4 paced changes ran the command %d times, %+v; want each answered from the kept result", got, a.LiveStats())
	}
}

// A result larger than the whole budget is not kept, whatever the largest
// a result may be.
func TestKeptNoLargerThanTheBudget(t *testing.T) {
	st := newHeldStore(1)
	a := newKeptServer(t, st, WithKeptResults(8, 1<<20))
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	if s := a.LiveStats(); s.Kept != 0 || s.KeptBytes > 8 {
		t.Errorf("%+v: want nothing kept over a budget of 8 bytes", s)
	}
}

// A middleware that shapes results must shape the re-runs' too (origin
// Live): their results are what reads are answered with. Shaped for every
// origin, a kept answer is shaped as a run's is.
func TestKeptShapedByMiddleware(t *testing.T) {
	redact := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			res, err := next(ctx, call)
			if r, ok := res.(item); ok {
				r.Name = "[redacted]"
				return r, err
			}
			return res, err
		}
	}
	st := newHeldStore(1)
	a := newKeptServer(t, st, WithMiddleware(redact))
	f := newFakeClient(t, a, "reader", 16)
	if e := f.subscribe("app://items_show/1"); e != nil {
		t.Fatal(e)
	}
	st.set(1, "secret")
	a.Changed("items/1")
	waitIdle(t, a)
	if name := keptName(t, f, "app://items_show/1", false); name != "[redacted]" || a.LiveStats().KeptAnswers != 1 {
		t.Errorf("read %q, %+v; want the redacted result, from the kept one", name, a.LiveStats())
	}
}
