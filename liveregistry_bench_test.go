package adapter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/digest"
)

// A registry with 10,000 subscriptions over 1,000 distinct argument sets
// (10 spellings or sessions each), spread over sessions of at most 64
// subscriptions, for TestLiveHeapPerSubscription, and the micro-benchmark
// of one re-run; the digest's, on the example's results, is further down.
// The fan-out benchmarks through real
// mcp-go clients are in package bench (bench/live_test.go).

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
				a.live.firstRun(context.Background(), c, args, raw, false)
			}
		})
		b.Run(fmt.Sprintf("rows=%d/direct", rows), func(b *testing.B) {
			for b.Loop() {
				_, _ = st.list(context.Background(), benchArgs{Customer: 7})
			}
		})
	}
}

// The results of the example's read commands (examples/customers), as its
// BenchmarkRerun runs them on its seeded SQLite store: their JSON, made
// once from the example, decoded into copies of its result types. The
// example is a program of its own; these copies let the digest here take
// the very values a re-run there would digest.
type (
	rerunCustomer struct {
		ID        int64  `json:"id"`
		Name      string `json:"name"`
		Email     string `json:"email"`
		CreatedAt string `json:"created_at"`
	}
	rerunOrder struct {
		ID          int64  `json:"id"`
		CustomerID  int64  `json:"customer_id"`
		AmountCents int64  `json:"amount_cents"`
		Status      string `json:"status"`
		PlacedOn    string `json:"placed_on"`
	}
	rerunIndex struct {
		Customers []rerunCustomer `json:"customers"`
		Total     int             `json:"total"`
		Page      int             `json:"page"`
		PerPage   int             `json:"per_page"`
	}
	rerunOrders struct {
		Orders           []rerunOrder `json:"orders"`
		Count            int          `json:"count"`
		TotalAmountCents int64        `json:"total_amount_cents"`
	}
)

type rerunResult struct {
	name string
	json []byte // as the example's command result encodes
	v    any
}

// rerunResults reads testdata/rerun_results.json. Each result must decode
// strictly and encode back to the same JSON: else the copies of the types
// have drifted from the example's.
func rerunResults(t testingT) []rerunResult {
	raw, err := os.ReadFile("testdata/rerun_results.json")
	if err != nil {
		t.Fatal(err)
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		t.Fatal(err)
	}
	results := []rerunResult{
		{name: "customers_index", v: new(rerunIndex)},
		{name: "customers_show", v: new(rerunCustomer)},
		{name: "orders_between/month", v: new(rerunOrders)},
		{name: "orders_between/year", v: new(rerunOrders)},
	}
	for i, r := range results {
		dec := json.NewDecoder(bytes.NewReader(byName[r.name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(r.v); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, byName[r.name]); err != nil {
			t.Fatal(err)
		}
		r.v = reflect.ValueOf(r.v).Elem().Interface() // the value, as a command returns it
		again, err := json.Marshal(r.v)
		if err != nil || !bytes.Equal(again, compact.Bytes()) {
			t.Fatalf("%s: encodes back as %s (%v), want %s", r.name, again, err, compact.Bytes())
		}
		r.json = again
		results[i] = r
	}
	return results
}

func TestRerunResults(t *testing.T) { rerunResults(t) }

// jsonSHA256 is the digest with SHA-256 in place of the two maphashes.
func jsonSHA256(v any) (digest.Digest, error) {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(v); err != nil {
		return digest.Digest{}, err
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return digest.Digest{binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])}, nil
}

// BenchmarkDigest is the digest (internal/digest) of the results of the
// example's re-runs, as the registry makes it (by the walk of the result
// type) and of their JSON (digest-json); json is their bare encoding into io.Discard, which
// the example's BenchmarkRerun measures too, on the values its commands
// return; sha256 is the digest with the hash docs/performance.md weighs
// against maphash.
func BenchmarkDigest(b *testing.B) {
	ds := digest.NewHasher()
	for _, r := range rerunResults(b) {
		rw := digest.NewWalk(reflect.TypeOf(r.v))
		b.Run(r.name+"/digest", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ds.Of(r.v, rw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(r.name+"/digest-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ds.OfJSON(r.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(r.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			enc := json.NewEncoder(io.Discard)
			for b.Loop() {
				if err := enc.Encode(r.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(r.name+"/sha256", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonSHA256(r.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
