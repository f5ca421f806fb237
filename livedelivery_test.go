package adapter

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// TestDeliveryWithConcurrentPOSTs is the regression test of lost
// notifications on legacy Streamable HTTP. One session listens on its GET
// stream to 20 subscriptions while four goroutines POST on the same session
// and writers change all 20 items every round. mcp-go starts a forwarder
// per POST that takes notifications off the session's channel and drops
// those it took after its POST finished; through HTTPHandler the adapter
// delivers on the GET stream itself, so every notification it hands over
// arrives, and every URI hears about its last change.
func TestDeliveryWithConcurrentPOSTs(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	const (
		items   = 20
		rounds  = 100
		posters = 4
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := newItemStore(items)
	a := newLiveServer(t, st)
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	defer hs.Close()

	tr, err := transport.NewStreamableHTTP(hs.URL, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, protocolOpts(true)...)
	var mu sync.Mutex
	heard := map[string]int{} // notifications per URI
	rc := newReceiveCounter()
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != mcp.MethodNotificationResourceUpdated {
			return
		}
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		mu.Lock()
		heard[uri]++
		mu.Unlock()
		rc.add()
	})
	defer c.Close()
	initialize(t, c)

	uris := make([]string, items)
	for i := range uris {
		uris[i] = fmt.Sprintf("app://items_show/%d", i+1)
		if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uris[i]}}); err != nil {
			t.Fatalf("subscribe %s: %v", uris[i], err)
		}
	}

	// The posters: reads on the session, as a client re-reading after a
	// notification does, until the writers are done.
	stopPosting := make(chan struct{})
	var posting sync.WaitGroup
	defer posting.Wait()
	defer cancel() // a failing test stops the posters before waiting for them
	var posts atomic.Int64
	for p := range posters {
		posting.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stopPosting:
					return
				default:
				}
				uri := uris[(p*7+i)%items]
				if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}}); err != nil {
					if ctx.Err() == nil {
						t.Errorf("read %s: %v", uri, err)
					}
					return
				}
				posts.Add(1)
			}
		})
	}

	write := func(round int) {
		for i := 1; i <= items; i++ {
			st.set(i, fmt.Sprintf("r%d", round))
			a.Changed(fmt.Sprintf("items/%d", i))
		}
	}
	for round := 1; round < rounds; round++ {
		// Waiting for the re-runs between rounds keeps changes from
		// coalescing: every round notifies all 20 subscriptions.
		write(round)
		waitIdle(t, a)
	}
	// Everything handed so far must arrive before the final round, so that
	// what the final round announces is told apart.
	rc.await(t, ctx, a)
	mu.Lock()
	before := make(map[string]int, len(heard))
	for u, n := range heard {
		before[u] = n
	}
	mu.Unlock()

	write(rounds)
	waitIdle(t, a)
	rc.await(t, ctx, a)
	close(stopPosting)

	mu.Lock()
	defer mu.Unlock()
	for _, u := range uris {
		if heard[u] <= before[u] {
			t.Errorf("%s: the final change was never announced (%d notifications in all)", u, heard[u])
		}
	}
	t.Logf("%d notifications handed and received, %d POSTs alongside", rc.n.Load(), posts.Load())
}

// receiveCounter counts the notifications a client received and wakes
// whoever awaits them.
type receiveCounter struct {
	n       atomic.Uint64
	arrived chan struct{}
}

func newReceiveCounter() *receiveCounter {
	return &receiveCounter{arrived: make(chan struct{}, 1)}
}

func (rc *receiveCounter) add() {
	rc.n.Add(1)
	select {
	case rc.arrived <- struct{}{}:
	default:
	}
}

// await waits until the client has received every notification the
// adapter handed over (call it once the adapter is idle), and fails when
// some do not arrive within 5 s.
func (rc *receiveCounter) await(t *testing.T, ctx context.Context, a *Adapter) {
	t.Helper()
	handed := a.LiveStats().Notified
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for rc.n.Load() < handed {
		select {
		case <-rc.arrived:
		case <-deadline.C:
			t.Fatalf("handed %d notifications, the client received %d", handed, rc.n.Load())
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if got := rc.n.Load(); got != handed {
		t.Fatalf("handed %d notifications, the client received %d", handed, got)
	}
}

// TestDeliveryWaitsForAGetStream: through HTTPHandler a legacy session's
// notifications travel on its GET stream only. One that finds no stream
// open waits for the next; one whose stream ended is not lost with it.
func TestDeliveryWaitsForAGetStream(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(3)
	a := newLiveServer(t, st)
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	defer hs.Close()
	s := newRawSession(t, hs.URL)
	s.call("resources/subscribe", map[string]any{"uri": "app://items_show/1"})

	// No stream yet: the notification waits in the outbox, and the
	// adapter is not idle while it does.
	st.set(1, "v2")
	a.Changed("items/1")
	waitParked(t, a)
	if got := a.LiveStats(); got.Pending != 1 || got.Notified != 0 {
		t.Fatalf("without a GET stream: %+v, want 1 pending and none handed", got)
	}
	idleCtx, cancelIdle := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelIdle()
	if err := a.WaitIdle(idleCtx); err == nil {
		t.Fatal("WaitIdle returned while a notification waited for a stream")
	}

	g1 := s.openStream()
	if uri := g1.next(); uri != "app://items_show/1" {
		t.Fatalf("first stream heard %q", uri)
	}
	waitIdle(t, a)
	if got := a.LiveStats(); got.Pending != 0 || got.Notified != 1 {
		t.Fatalf("after the stream opened: %+v, want nothing pending and 1 handed", got)
	}

	// The client drops its stream; a change meanwhile waits for the next.
	g1.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool { return a.live.gets.newest(s.id) == nil }); err != nil {
		t.Fatal("the closed stream is still held")
	}
	st.set(1, "v3")
	a.Changed("items/1")
	waitParked(t, a)
	if got := a.LiveStats(); got.Pending != 1 {
		t.Fatalf("between streams: %+v, want 1 pending", got)
	}
	g2 := s.openStream()
	if uri := g2.next(); uri != "app://items_show/1" {
		t.Fatalf("second stream heard %q", uri)
	}
	g2.close()
	s.delete()
	waitEmpty(t, a)
}

// TestPlainStreamableHTTPStillDelivers: without HTTPHandler, legacy
// subscriptions go through mcp-go's session channel as before.
func TestPlainStreamableHTTPStillDelivers(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(3)
	a := newLiveServer(t, st)
	hs := httptest.NewServer(server.NewStreamableHTTPServer(a.Server()))
	defer hs.Close()
	s := newRawSession(t, hs.URL)
	g := s.openStream()
	s.call("resources/subscribe", map[string]any{"uri": "app://items_show/2"})
	st.set(2, "v2")
	a.Changed("items/2")
	if uri := g.next(); uri != "app://items_show/2" {
		t.Fatalf("heard %q", uri)
	}
	g.close()
	s.delete()
	waitEmpty(t, a)
}

// waitParked waits until the re-runs are done and nothing is being
// delivered: what is pending then waits for a stream.
func waitParked(t *testing.T, a *Adapter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := a.live
	if err := r.waitFor(ctx, func() bool { return r.workers == 0 && r.deliverers.Load() == 0 && r.runq.n == 0 }); err != nil {
		t.Fatalf("re-runs or deliveries still under way: %+v", a.LiveStats())
	}
}

// A session whose channel its transport has closed is gone: the burst
// handed to it is dropped, in one piece, without a panic and without
// holding up the other sessions or the registry, and its outbox is left
// empty (nothing is queued for it again until the next change).
func TestDeliveryToAClosedChannel(t *testing.T) {
	st := newItemStore(3)
	a := newLiveServer(t, st)
	gone := newFakeClient(t, a, "gone", 100)
	live := newFakeClient(t, a, "live", 100)
	uris := []string{"app://items_show/1", "app://items_show/2", "app://items_show/3"}
	for _, f := range []*fakeClient{gone, live} {
		for _, u := range uris {
			if err := f.subscribe(u); err != nil {
				t.Fatalf("%s %s: %+v", f.s.id, u, err)
			}
		}
	}
	close(gone.s.ch) // its transport went away; the session is still registered
	for id := 1; id <= 3; id++ {
		st.set(id, "changed")
	}
	a.Changed("items")
	waitIdle(t, a)
	if got := live.take(); !slices.Equal(got, uris) {
		t.Fatalf("the live session heard %v, want %v", got, uris)
	}
	if s := a.LiveStats(); s.Pending != 0 {
		t.Fatalf("%d notifications still pending for the closed session", s.Pending)
	}
}
