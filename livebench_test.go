package adapter

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The fan-out benchmark: 10,000 subscriptions over 1,000 distinct argument
// sets (10 spellings or sessions each), spread over sessions of at most 64
// subscriptions, and one Changed that affects all of them.

const (
	benchQueries = 1000
	benchPerURI  = 10
)

// benchStore is a table of orders per customer; a query lists one
// customer's orders, as a typical live query would.
type benchStore struct {
	mu      sync.RWMutex
	version int
	orders  map[int][]benchOrder
}

type benchOrder struct {
	ID       int    `json:"id"`
	Customer int    `json:"customer"`
	Status   string `json:"status"`
	Cents    int    `json:"amount_cents"`
	PlacedOn string `json:"placed_on"`
}

type benchArgs struct {
	Customer int `json:"customer"`
}

type benchPage struct {
	Customer int          `json:"customer"`
	Version  int          `json:"version"`
	Orders   []benchOrder `json:"orders"`
}

func newBenchStore(rows int) *benchStore {
	s := &benchStore{orders: make(map[int][]benchOrder)}
	for c := 1; c <= benchQueries; c++ {
		for i := range rows {
			s.orders[c] = append(s.orders[c], benchOrder{ID: c*1000 + i, Customer: c, Status: "open", Cents: 100 * i, PlacedOn: "2026-01-02"})
		}
	}
	return s
}

func (s *benchStore) list(ctx context.Context, args benchArgs) (benchPage, error) {
	Reads(ctx, fmt.Sprintf("orders/%d", args.Customer))
	s.mu.RLock()
	defer s.mu.RUnlock()
	return benchPage{Customer: args.Customer, Version: s.version, Orders: append([]benchOrder(nil), s.orders[args.Customer]...)}, nil
}

func (s *benchStore) bump() {
	s.mu.Lock()
	s.version++
	s.mu.Unlock()
}

// drainedSession is a session whose notifications a goroutine of its own
// reads and counts, as a transport would.
type drainedSession struct {
	fakeSession
	done chan struct{}
}

type benchSetup struct {
	a        *Adapter
	st       *benchStore
	sessions []*drainedSession
	received atomic.Int64
	uriBytes int
}

// newBenchSetup subscribes 10,000 URIs. Each argument set is spelled by
// benchPerURI subscriptions: the plain URI from several sessions, and
// percent-encoded spellings of it.
func newBenchSetup(t testingT, rows int) *benchSetup {
	b := &benchSetup{st: newBenchStore(rows)}
	b.a = Wrap(server.NewMCPServer("bench", "1"))
	Live(b.a, "orders_of", "The orders of one customer.", b.st.list)
	perSession := DefaultSubscriptionCap
	var f *fakeClient
	n := 0
	for k := range benchPerURI {
		for c := 1; c <= benchQueries; c++ {
			if n%perSession == 0 {
				f = b.newSession(t, len(b.sessions))
			}
			n++
			uri := fmt.Sprintf("app://orders_of/%d", c)
			if k%2 == 1 {
				// The same arguments, spelled with an encoded first digit.
				uri = fmt.Sprintf("app://orders_of/%%3%c%s", uri[len("app://orders_of/")], uri[len("app://orders_of/")+1:])
			}
			b.uriBytes += len(uri)
			if err := f.subscribe(uri); err != nil {
				t.Fatalf("subscribe %s: %+v", uri, err)
			}
		}
	}
	return b
}

func (b *benchSetup) newSession(t testingT, i int) *fakeClient {
	s := &drainedSession{fakeSession: fakeSession{id: fmt.Sprint("bench-", i), ch: make(chan mcp.JSONRPCNotification, 100)}, done: make(chan struct{})}
	b.sessions = append(b.sessions, s)
	go func() {
		for {
			select {
			case <-s.ch:
				b.received.Add(1)
			case <-s.done:
				return
			}
		}
	}()
	if err := b.a.Server().RegisterSession(context.Background(), &s.fakeSession); err != nil {
		t.Fatal(err)
	}
	return &fakeClient{a: b.a, s: &s.fakeSession}
}

func (b *benchSetup) close() {
	for _, s := range b.sessions {
		b.a.Server().UnregisterSession(context.Background(), s.id)
		close(s.done)
	}
}

// BenchmarkLiveFanout measures one Changed that affects all 1,000 queries
// behind 10,000 subscriptions, until every re-run ran and every
// notification was handed to its session; next to it, calling the same
// 1,000 commands directly, and the ratio of the two.
func BenchmarkLiveFanout(b *testing.B) {
	for _, rows := range []int{1, 20} {
		for _, changed := range []bool{true, false} {
			b.Run(fmt.Sprintf("rows=%d/changed=%v", rows, changed), func(b *testing.B) {
				benchFanout(b, rows, changed)
			})
		}
	}
}

func benchFanout(b *testing.B, rows int, changed bool) {
	s := newBenchSetup(b, rows)
	defer s.close()
	ctx := context.Background()

	direct := func() {
		for c := 1; c <= benchQueries; c++ {
			if _, err := s.st.list(ctx, benchArgs{Customer: c}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The direct cost, measured the same way, before and outside b.Loop.
	const directRounds = 20
	start := time.Now()
	for range directRounds {
		direct()
	}
	directCost := time.Since(start) / directRounds

	before := s.a.LiveStats()
	var loops int
	start = time.Now()
	for b.Loop() {
		loops++
		if changed {
			s.st.bump()
		}
		s.a.Changed("orders")
		if err := s.a.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	after := s.a.LiveStats()
	if runs := after.Reruns - before.Reruns; runs != uint64(loops*benchQueries) {
		b.Fatalf("%d re-runs for %d changes, want %d each", runs, loops, benchQueries)
	}
	wantNotes := uint64(0)
	if changed {
		wantNotes = uint64(loops * benchQueries * benchPerURI)
	}
	if notes := after.Notified - before.Notified; notes != wantNotes {
		b.Fatalf("%d notifications, want %d", notes, wantNotes)
	}
	perChange := elapsed / time.Duration(loops)
	b.ReportMetric(float64(directCost.Microseconds()), "direct-µs")
	b.ReportMetric(float64(perChange)/float64(directCost), "x-direct")
}

// TestLiveHeapPerSubscription measures the heap the registry holds for
// 10,000 subscriptions over 1,000 queries, beyond the URI strings: it must
// stay under 1 KiB per subscription.
func TestLiveHeapPerSubscription(t *testing.T) {
	if testing.Short() {
		t.Skip("subscribes 10,000 URIs")
	}
	before := heapInUse()
	s := newBenchSetup(t, 1)
	defer s.close()
	after := heapInUse()
	subs := s.a.LiveStats().Subscriptions
	if subs != benchQueries*benchPerURI || s.a.LiveStats().Queries != benchQueries {
		t.Fatalf("stats %+v", s.a.LiveStats())
	}
	// The sessions are the transport's, not the registry's: take out their
	// channels (100 notifications each) and goroutines.
	var sessions uint64
	for range s.sessions {
		sessions += 100*uint64(notificationSize()) + 8<<10
	}
	held := int64(after) - int64(before) - int64(sessions) - int64(s.uriBytes)
	per := float64(held) / float64(subs)
	t.Logf("%d subscriptions, %d queries, %d sessions: %d bytes held beyond URIs and sessions, %.0f bytes per subscription",
		subs, benchQueries, len(s.sessions), held, per)
	if per > 1024 {
		t.Fatalf("%.0f bytes per subscription, want at most 1024", per)
	}

	// Once notified, a subscription also keeps the params of its
	// notification, made at the first delivery.
	s.st.bump()
	s.a.Changed("orders")
	waitIdle(t, s.a)
	notified := heapInUse()
	held = int64(notified) - int64(before) - int64(sessions) - int64(s.uriBytes)
	per = float64(held) / float64(subs)
	t.Logf("after one notification each: %d bytes held, %.0f bytes per subscription", held, per)
	if per > 1024 {
		t.Fatalf("%.0f bytes per notified subscription, want at most 1024", per)
	}
	runtime.KeepAlive(s)
}

func notificationSize() int {
	return int(unsafe.Sizeof(mcp.JSONRPCNotification{}))
}

// BenchmarkLiveRerun is the cost of one re-run of one query (the command,
// the middleware chain, the read set and the digest), beside the command
// called directly.
func BenchmarkLiveRerun(b *testing.B) {
	for _, rows := range []int{1, 20} {
		st := newBenchStore(rows)
		a := Wrap(server.NewMCPServer("bench", "1"))
		Live(a, "orders_of", "The orders of one customer.", st.list)
		c := a.command("orders_of")
		raw := []byte(`{"customer":7}`)
		args, err := c.decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("rows=%d/rerun", rows), func(b *testing.B) {
			for b.Loop() {
				a.live.run(context.Background(), c, args, raw, 2)
			}
		})
		b.Run(fmt.Sprintf("rows=%d/direct", rows), func(b *testing.B) {
			for b.Loop() {
				_, _ = st.list(context.Background(), benchArgs{Customer: 7})
			}
		})
	}
}
