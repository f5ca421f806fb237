package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/draw"
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

// rawSession is a legacy Streamable HTTP session spoken by hand, so that a
// test decides exactly when a GET stream opens and closes.
type rawSession struct {
	t   *testing.T
	url string
	id  string
	seq int
}

func newRawSession(t *testing.T, url string) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: url}
	res := s.post(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw", "version": "1"},
	}})
	s.id = res.Header.Get(server.HeaderKeySessionID)
	if s.id == "" {
		t.Fatal("initialize: no session id")
	}
	s.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

func (s *rawSession) request(method string, body io.Reader) *http.Request {
	req, err := http.NewRequest(method, s.url, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if s.id != "" {
		req.Header.Set(server.HeaderKeySessionID, s.id)
	}
	return req
}

// post sends msg and reads the whole response.
func (s *rawSession) post(msg map[string]any) *http.Response {
	s.t.Helper()
	b, _ := json.Marshal(msg)
	req := s.request(http.MethodPost, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		s.t.Fatalf("%v: %s %s", msg["method"], res.Status, body)
	}
	if bytes.Contains(body, []byte(`"error"`)) {
		s.t.Fatalf("%v: %s", msg["method"], body)
	}
	return res
}

// call sends a request and fails the test on an error response.
func (s *rawSession) call(method string, params map[string]any) {
	s.t.Helper()
	s.seq++
	s.post(map[string]any{"jsonrpc": "2.0", "id": s.seq, "method": method, "params": params})
}

func (s *rawSession) delete() {
	s.t.Helper()
	res, err := http.DefaultClient.Do(s.request(http.MethodDelete, nil))
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
}

// rawStream is an open GET stream.
type rawStream struct {
	t      *testing.T
	cancel context.CancelFunc
	body   io.ReadCloser
	uris   chan string
	done   chan struct{}
}

// openStream opens a GET stream and reads its resources/updated
// notifications in the background.
func (s *rawSession) openStream() *rawStream {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res, err := http.DefaultClient.Do(s.request(http.MethodGet, nil).WithContext(ctx))
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		s.t.Fatalf("GET: %s", res.Status)
	}
	g := &rawStream{t: s.t, cancel: cancel, body: res.Body, uris: make(chan string, 64), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var n mcp.JSONRPCNotification
			if json.Unmarshal([]byte(data), &n) == nil && n.Method == mcp.MethodNotificationResourceUpdated {
				uri, _ := n.Params.AdditionalFields["uri"].(string)
				g.uris <- uri
			}
		}
	}()
	s.t.Cleanup(g.close)
	return g
}

// next waits for the next notification's URI.
func (g *rawStream) next() string {
	g.t.Helper()
	select {
	case u := <-g.uris:
		return u
	case <-time.After(10 * time.Second):
		g.t.Fatal("no notification within 10 s")
	}
	return ""
}

func (g *rawStream) close() {
	g.cancel()
	g.body.Close()
	<-g.done
}

// TestLiveSlowClient subscribes one session to 10 URIs and never reads its
// notifications, while 1,000 and then 10,000 more writes change every one
// of them. mcp-go's channel fills up (100), then the session's delivery
// goroutine waits with one notification in hand, and everything else
// coalesces: at most one pending entry per URI, and no memory that grows
// with the number of writes. When the client finally reads, it hears every
// URI again, and when it goes, everything it held is freed.
func TestLiveSlowClient(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	const uris = 10
	st := newItemStore(uris)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "slow", 100) // mcp-go's buffer size
	for i := 1; i <= uris; i++ {
		if err := f.subscribe(fmt.Sprintf("app://items_show/%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	maxPending := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// writes makes n writes, each followed by its re-run, so that every one
	// changes a subscribed result.
	writes := func(n int) {
		for w := range n {
			id := w%uris + 1
			st.set(id, fmt.Sprint(w))
			a.Changed(fmt.Sprintf("items/%d", id))
			err := a.live.waitFor(ctx, func() bool {
				maxPending = max(maxPending, a.live.statsLocked().Pending)
				return a.live.statsLocked().Running == 0
			})
			if err != nil {
				t.Fatalf("re-runs did not finish: %+v", a.LiveStats())
			}
			// And the delivery caught up: the notification is in the
			// channel, or the channel is full. Handing one to a channel
			// signals nothing, so this polls, yielding to the delivery
			// goroutine, until ctx's deadline.
			for {
				s := a.LiveStats()
				if s.Pending == 0 || len(f.s.ch) == cap(f.s.ch) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("delivery did not catch up: %+v, channel %d", s, len(f.s.ch))
				}
				runtime.Gosched()
			}
		}
	}

	writes(1000)
	s := a.LiveStats()
	t.Logf("after 1,000 writes: %+v, max pending %d", s, maxPending)
	if s.Pending > uris || maxPending > uris {
		t.Fatalf("pending %d (max %d), want at most one per URI (%d)", s.Pending, maxPending, uris)
	}
	if s.Reruns != 1000 || s.Notified != 100 || len(f.s.ch) != 100 {
		t.Fatalf("%d re-runs, notified %d, channel holds %d: want mcp-go's buffer full, nothing dropped", s.Reruns, s.Notified, len(f.s.ch))
	}
	if s.Delivering != 1 {
		t.Fatalf("%d delivery goroutines, want the one waiting", s.Delivering)
	}
	heap1 := heapInUse()

	writes(10_000)
	s = a.LiveStats()
	heap2 := heapInUse()
	t.Logf("after 10,000 more: %+v, max pending %d, heap %d -> %d bytes", s, maxPending, heap1, heap2)
	if s.Pending > uris || maxPending > uris || s.Notified != 100 {
		t.Fatalf("pending %d (max %d), notified %d", s.Pending, maxPending, s.Notified)
	}
	if grew := int64(heap2) - int64(heap1); grew > 256<<10 {
		t.Fatalf("heap grew by %d bytes over 10,000 writes to a client that never reads", grew)
	}

	// The client reads at last: every URI changed after the buffer filled,
	// so every URI is heard again.
	for range 100 {
		<-f.s.ch // what mcp-go held from the start
	}
	waitIdle(t, a)
	last := slices.Compact(f.take())
	if len(last) != uris {
		t.Fatalf("after draining heard %v, want all %d URIs once", last, uris)
	}

	// A slow client that leaves frees everything, its goroutine included.
	writes(1000)
	f.close()
	waitEmpty(t, a)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLiveOutboxNeverEmpty keeps an outbox from ever emptying: three
// subscriptions are queued again after each delivery. Its array must not
// grow with the number of deliveries.
func TestLiveOutboxNeverEmpty(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	a := newLiveServer(t, newItemStore(3))
	f := newFakeClient(t, a, "steady", 0) // every delivery waits for the reader
	for i := 1; i <= 3; i++ {
		if err := f.subscribe(fmt.Sprintf("app://items_show/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	r := a.live
	r.mu.Lock()
	c := r.conns[f.s]
	var subs []*sub
	for _, sb := range c.legacy.subs {
		subs = append(subs, sb)
	}
	r.mu.Unlock()
	for range 10_000 {
		r.mu.Lock()
		for _, sb := range subs {
			r.enqueueLocked(subRef{sb: sb, c: c, slot: sb.slot})
		}
		r.mu.Unlock()
		<-f.s.ch
	}
	c.mu.Lock()
	size := cap(c.queue)
	c.mu.Unlock()
	if size > 2*len(subs) {
		t.Fatalf("outbox array of %d entries for %d subscriptions", size, len(subs))
	}
	f.close()
	waitEmpty(t, a)
}

// Subscriptions that end while their notifications are on the way: none is
// handed over after the unsubscribe, or the end of the listen stream, that
// ended it; and a model of clients subscribing, listening, leaving and
// coming back while writers write, after which every subscriber has heard
// of its current result.

// gatedSession is a fakeSession whose channel getter can be held: the
// adapter calls UpgradeToSSEWhenReceiveNotification (channelFor) every
// time it is about to hand notifications to the session, after it took
// them from the outbox. Armed, the gate lets pass calls through and stops
// the next one until release is closed, telling entered.
type gatedSession struct {
	*fakeSession
	mu      sync.Mutex
	armed   bool
	pass    int
	entered chan struct{}
	release chan struct{}
}

func (g *gatedSession) UpgradeToSSEWhenReceiveNotification() {
	g.mu.Lock()
	if !g.armed {
		g.mu.Unlock()
		return
	}
	if g.pass > 0 {
		g.pass--
		g.mu.Unlock()
		return
	}
	g.armed = false
	g.mu.Unlock()
	close(g.entered)
	<-g.release
}

// arm makes the gate stop the call after pass more.
func (g *gatedSession) arm(pass int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.pass = true, pass
	g.entered, g.release = make(chan struct{}), make(chan struct{})
}

// gatedClient speaks raw JSON-RPC through a gatedSession.
type gatedClient struct {
	t      *testing.T
	a      *Adapter
	g      *gatedSession
	nextID int
}

func newGatedClient(t *testing.T, a *Adapter, id string, buffer int) *gatedClient {
	g := &gatedSession{fakeSession: &fakeSession{id: id, ch: make(chan mcp.JSONRPCNotification, buffer)}}
	if err := a.Server().RegisterSession(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Server().UnregisterSession(context.Background(), id) })
	return &gatedClient{t: t, a: a, g: g}
}

func (c *gatedClient) ctx() context.Context {
	return c.a.Server().WithContext(context.Background(), c.g)
}

func (c *gatedClient) call(method string, params any) *mcp.JSONRPCErrorDetails {
	c.nextID++
	return handleCall(c.a, c.ctx(), c.nextID, method, params)
}

// listen opens a listen stream for uris, waits for its acknowledgement,
// and returns its subscription id (as notifications carry it), and a stop
// that cancels the request and waits until HandleMessage has answered it.
func (c *gatedClient) listen(uris ...string) (subID string, stop func()) {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	raw := listenRequest(id, uris)
	ctx, cancel := context.WithCancel(c.ctx())
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		c.a.HandleMessage(ctx, raw)
	}()
	c.t.Cleanup(func() { cancel(); <-answered })
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n := <-c.g.ch:
			if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
				return fmt.Sprint(id), func() { cancel(); <-answered }
			}
		case <-timeout:
			c.t.Fatalf("no acknowledgement of listen %v", uris)
		}
	}
}

// fill fills the session's channel to the brim with notifications of no
// interest, so that a hand-over finds no room.
func (c *gatedClient) fill() {
	for len(c.g.ch) < cap(c.g.ch) {
		c.g.ch <- mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "test/filler"}}
	}
}

// updates empties the session's channel and returns the
// notifications/resources/updated in it.
func (c *gatedClient) updates() []note {
	var out []note
	for {
		select {
		case n := <-c.g.ch:
			if x, ok := noteOf(n); ok {
				out = append(out, x)
			}
		default:
			return out
		}
	}
}

func waitSubs(t *testing.T, a *Adapter, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool { return a.live.subs == n }); err != nil {
		t.Fatalf("registry holds %d subscriptions, want %d", a.LiveStats().Subscriptions, n)
	}
}

// gateEntered waits until the gate stopped a hand-over.
func gateEntered(t *testing.T, g *gatedSession) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no hand-over reached the session")
	}
}

// After resources/unsubscribe has returned, the adapter must hand the
// session no notification for the URI. A delivery goroutine that took the
// notification from the outbox before the unsubscribe still hands it over
// afterwards: handOver never looks at whether the subscription ended.
func TestNoNotificationAfterUnsubscribe(t *testing.T) {
	st := newItemStore(1)
	a := newLiveServer(t, st)
	c := newGatedClient(t, a, "unsub", 4)
	if err := c.call("resources/subscribe", map[string]any{"uri": "app://items_show/1"}); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}
	waitIdle(t, a)
	c.updates()

	// The hand-over at the end of the round finds the channel full and
	// leaves the rest to a delivery goroutine, which takes the outbox and
	// is stopped at the gate, before it sends.
	c.fill()
	c.g.arm(1)
	st.set(1, "v2")
	a.Changed("items/1")
	gateEntered(t, c.g)

	c.updates() // the client reads: there is room again
	if err := c.call("resources/unsubscribe", map[string]any{"uri": "app://items_show/1"}); err != nil {
		t.Fatalf("unsubscribe: %+v", err)
	}
	waitSubs(t, a, 0)
	close(c.g.release)
	waitIdle(t, a)
	if got := c.updates(); len(got) != 0 {
		t.Fatalf("after resources/unsubscribe returned, the session was handed %+v", got)
	}
}

// After a listen stream has ended (its request cancelled and answered),
// the adapter must hand the session no notification carrying its
// subscription id. send checks the stream's end only when the channel is
// full: with room, trySend hands over the notification of an ended stream.
func TestNoNotificationAfterListenEnds(t *testing.T) {
	st := newItemStore(1)
	a := newLiveServer(t, st)
	c := newGatedClient(t, a, "listen", 4)
	subID, stop := c.listen("app://items_show/1")
	waitIdle(t, a)
	c.updates()

	c.fill()
	c.g.arm(1)
	st.set(1, "v2")
	a.Changed("items/1")
	gateEntered(t, c.g)

	c.updates()
	stop() // the client cancels the listen; mcp-go has answered it
	waitSubs(t, a, 0)
	close(c.g.release)
	waitIdle(t, a)
	if got := c.updates(); len(got) != 0 {
		t.Fatalf("after listen stream %s ended, the session was handed %+v", subID, got)
	}
}

// TestLiveConcurrentClientsModel runs clients and writers at once: clients
// subscribe (legacy and listen), unsubscribe, end streams, reconnect and
// read what they are notified of, while writers write values never written
// before and report them. Values never come back, so a read between
// notifications cannot see a state the runs coalesce away: once all is
// quiet, every live subscription's last read must be current.
func TestLiveConcurrentClientsModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { concurrentClientsCase(t, seed) })
		if t.Failed() {
			return
		}
	}
}

func concurrentClientsCase(t *testing.T, seed uint64) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	const (
		nItems   = 3
		nClients = 4
		nWriters = 2
		steps    = 150
	)
	st := newItemStore(nItems)
	srv := newLiveServerSlow(t, st)
	a := srv
	uris := []string{}
	for i := 1; i <= nItems; i++ {
		uris = append(uris, fmt.Sprintf("app://slow_show/%d", i), fmt.Sprintf("app://slow_show/%%3%d", i))
	}
	current := func(uri string) string {
		var id int
		if _, err := fmt.Sscanf(uri, "app://slow_show/%d", &id); err != nil {
			fmt.Sscanf(uri, "app://slow_show/%%3%d", &id)
		}
		if v, ok := st.get(id); ok {
			return v
		}
		return "not found"
	}
	var counter sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for w := range nWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := draw.Seeded(seed*1000 + uint64(w) + 500)
			for range steps {
				id := c.IntRange(1, nItems)
				counter.Lock()
				next++
				v := fmt.Sprintf("v%d", next)
				counter.Unlock()
				if c.Intn(6) == 0 {
					st.mu.Lock()
					delete(st.items, id)
					st.mu.Unlock()
				} else {
					st.set(id, v)
				}
				if c.Bool() {
					a.Changed("items")
				} else {
					a.Changed(fmt.Sprintf("items/%d", id))
				}
				if c.Intn(4) == 0 {
					time.Sleep(time.Duration(c.Intn(300)) * time.Microsecond)
				}
			}
		}()
	}
	type client struct {
		f       *fakeClient
		streams map[string]func()
		subs    map[subKey]string
		log     []string
	}
	clients := make([]*client, nClients)
	var mu sync.Mutex // guards clients[i] replacement at the end only
	for i := range nClients {
		i := i
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := draw.Seeded(seed*1000 + uint64(i))
			gen := 0
			cl := &client{f: newFakeClientNoT(t, a, fmt.Sprintf("c%d-%d", i, gen), 1000), streams: map[string]func(){}, subs: map[subKey]string{}}
			readNotes := func() {
				for _, n := range cl.f.notes() {
					k := subKey{uri: n.uri, stream: n.subID}
					if _, live := cl.subs[k]; live {
						cl.subs[k] = current(n.uri)
					}
				}
			}
			for range steps {
				switch c.Intn(8) {
				case 0, 1:
					uri := draw.Pick(c, uris)
					k := subKey{uri: uri}
					_, had := cl.subs[k]
					if err := cl.f.subscribe(uri); err == nil && !had {
						cl.subs[k] = current(uri)
					}
				case 2:
					uri := draw.Pick(c, uris)
					cl.f.unsubscribe(uri)
					delete(cl.subs, subKey{uri: uri})
				case 3:
					us := draw.Distinct(c, uris, 1, 3)
					acked, id, stop := cl.f.listenID(t, us...)
					if len(acked) == 0 {
						stop()
						break
					}
					cl.streams[id] = stop
					for _, u := range acked {
						cl.subs[subKey{uri: u, stream: id}] = current(u)
					}
				case 4:
					for id, stop := range cl.streams {
						stop()
						delete(cl.streams, id)
						for k := range cl.subs {
							if k.stream == id {
								delete(cl.subs, k)
							}
						}
						break
					}
				case 5:
					if c.Intn(4) == 0 {
						cl.f.close()
						gen++
						cl = &client{f: newFakeClientNoT(t, a, fmt.Sprintf("c%d-%d", i, gen), 1000), streams: map[string]func(){}, subs: map[subKey]string{}}
					}
				default:
					readNotes()
				}
			}
			mu.Lock()
			clients[i] = cl
			mu.Unlock()
		}()
	}
	wg.Wait()
	for {
		waitIdle(t, a)
		heard := false
		for _, cl := range clients {
			for _, n := range cl.f.notes() {
				heard = true
				k := subKey{uri: n.uri, stream: n.subID}
				if _, live := cl.subs[k]; live {
					cl.subs[k] = current(n.uri)
				}
			}
		}
		if !heard {
			break
		}
	}
	for i, cl := range clients {
		for k, seen := range cl.subs {
			if now := current(k.uri); seen != now {
				t.Errorf("client %d, %+v: last read %q, now %q, and no notification (%+v)", i, k, seen, now, a.LiveStats())
			}
		}
	}
	for _, cl := range clients {
		cl.f.close()
	}
	waitEmpty(t, a)
}

// newFakeClientNoT is newFakeClient for use off the test's goroutine: it
// registers the session; the caller closes it.
func newFakeClientNoT(t *testing.T, a *Adapter, id string, buffer int) *fakeClient {
	s := &fakeSession{id: id, ch: make(chan mcp.JSONRPCNotification, buffer)}
	if err := a.Server().RegisterSession(context.Background(), s); err != nil {
		panic(err)
	}
	return &fakeClient{a: a, s: s}
}

// newLiveServerSlow has slow_show, items_show taking a while at random.
func newLiveServerSlow(t *testing.T, st *itemStore) *Adapter {
	a := Wrap(server.NewMCPServer("slow", "1"))
	var n atomic.Uint64
	Live(a, "slow_show", "One item, slowly.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, fmt.Sprintf("items/%d", args.ID))
		if n.Add(1)%3 == 0 {
			time.Sleep(time.Duration(n.Load()%200) * time.Microsecond)
		}
		v, ok := st.get(args.ID)
		if !ok {
			return item{}, ErrNotFound
		}
		if n.Load()%5 == 0 {
			time.Sleep(time.Duration(n.Load()%100) * time.Microsecond)
		}
		return item{ID: args.ID, Name: v}, nil
	})
	return a
}

// The same without any instrument: a client slow to read fills its
// channel, the delivery goroutine takes the notification and waits for
// room; the client unsubscribes, then reads, and still gets it. send waits
// for room, the session's end or a listen stream's end, never for the
// subscription's.
func TestNoNotificationAfterUnsubscribeWhileBlocked(t *testing.T) {
	st := newItemStore(1)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "unsub-blocked", 2)
	if err := f.subscribe("app://items_show/1"); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}
	waitIdle(t, a)
	for len(f.s.ch) < cap(f.s.ch) {
		f.s.ch <- mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "test/filler"}}
	}
	st.set(1, "v2")
	a.Changed("items/1")
	// The delivery goroutine has taken the outbox: nothing pending, one
	// delivering.
	deadline := time.Now().Add(10 * time.Second)
	for s := a.LiveStats(); s.Pending != 0 || s.Delivering != 1 || s.Running != 0; s = a.LiveStats() {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery never took the notification: %+v", s)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if err := f.unsubscribe("app://items_show/1"); err != nil {
		t.Fatalf("unsubscribe: %+v", err)
	}
	if s := a.LiveStats(); s.Subscriptions != 0 {
		t.Fatalf("unsubscribe left %+v", s)
	}
	// The client reads what its channel held when the unsubscribe
	// returned: the fillers, and nothing else.
	for range cap(f.s.ch) {
		if n := <-f.s.ch; n.Method != "test/filler" {
			t.Fatalf("the channel held %+v", n)
		}
	}
	waitIdle(t, a)
	if got := f.take(); len(got) != 0 {
		t.Fatalf("after resources/unsubscribe returned, the session was handed %v", got)
	}
}

// A resources/subscribe whose request is cancelled while its first run is
// under way (its HTTP client gone; notifications/cancelled cannot reach
// it) makes no subscription: the client was told nothing, or will ignore
// the answer, and does not know it is subscribed. Made anyway, it held a
// place of the caps and heard a change it never asked for, the first one
// spurious (the run's digest was that of its cancellation).
func TestCancelledSubscribeMakesNoSubscription(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	a := Wrap(server.NewMCPServer("t", "1"))
	Live(a, "slow", "", func(ctx context.Context, args itemArgs) (int, error) {
		Reads(ctx, "items")
		if args.ID == 1 {
			close(started)
			<-release
		}
		return args.ID, ctx.Err()
	})
	f := newFakeClient(t, a, "f", 16)
	ctx, cancel := context.WithCancel(f.ctx())
	answered := make(chan *mcp.JSONRPCErrorDetails, 1)
	go func() {
		answered <- handleCall(a, ctx, 1, "resources/subscribe", map[string]any{"uri": "app://slow/1"})
	}()
	<-started
	cancel()
	close(release)
	if err := <-answered; err == nil {
		t.Error("the cancelled subscribe answered success")
	}
	if s := a.LiveStats(); s.Subscriptions != 0 || s.Queries != 0 {
		t.Fatalf("after a cancelled subscribe: %+v, want no subscription", s)
	}
	// The session may subscribe again, and that one is made.
	if err := f.subscribe("app://slow/2"); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}
	if s := a.LiveStats(); s.Subscriptions != 1 {
		t.Fatalf("after a second subscribe: %+v, want one subscription", s)
	}
}

// A resources/unsubscribe that arrives while a resources/subscribe of the
// same URI is running its first run (mcp-go serves a session's requests
// concurrently) must still leave the client unsubscribed: it came last.
// The subscription was made after it, held a place of both caps until the
// session ended, and notified a client that had unsubscribed.
func TestUnsubscribeDuringFirstRunWins(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	a := Wrap(server.NewMCPServer("t", "1"))
	Live(a, "slow", "", func(ctx context.Context, args itemArgs) (int, error) {
		Reads(ctx, "items")
		if first.CompareAndSwap(false, true) {
			close(started)
			<-release
		}
		return args.ID, nil
	})
	f := newFakeClient(t, a, "f", 16)
	answered := make(chan *mcp.JSONRPCErrorDetails, 1)
	go func() {
		answered <- handleCall(a, f.ctx(), 1, "resources/subscribe", map[string]any{"uri": "app://slow/1"})
	}()
	<-started
	if err := handleCall(a, f.ctx(), 2, "resources/unsubscribe", map[string]any{"uri": "app://slow/1"}); err != nil {
		t.Fatalf("unsubscribe: %+v", err)
	}
	close(release)
	if err := <-answered; err != nil {
		t.Errorf("the subscribe, undone by the unsubscribe, answered %+v", err)
	}
	if s := a.LiveStats(); s.Subscriptions != 0 || s.Queries != 0 || s.Sessions != 0 {
		t.Fatalf("after an unsubscribe during the subscribe's first run: %+v, want nothing held", s)
	}
	// The withdrawal ended with that subscribe: the next one is made.
	if err := f.subscribe("app://slow/1"); err != nil {
		t.Fatalf("subscribe again: %+v", err)
	}
	if s := a.LiveStats(); s.Subscriptions != 1 {
		t.Fatalf("after subscribing again: %+v, want one subscription", s)
	}
}

// The re-runs of one change run oldest query first, in the order the
// queries were made (liveregistry.go, changeInOrderLocked).
func TestRerunsGoOldestFirst(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	const n = 40
	var mu sync.Mutex
	var ran []int
	a := Wrap(server.NewMCPServer("order", "1"))
	Live(a, "rows_show", "One row.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, fmt.Sprintf("rows/%d", args.ID))
		mu.Lock()
		ran = append(ran, args.ID)
		mu.Unlock()
		return item{ID: args.ID}, nil
	})
	a.live.mu.Lock()
	a.live.maxRuns = 1 // one re-run at a time: the order they were taken in
	a.live.mu.Unlock()
	f := newFakeClient(t, a, "order", 2*n)
	// Made in an order the index's maps would not keep: odd ids, then
	// even ones.
	var uris, want []int
	for id := 1; id <= n; id += 2 {
		uris = append(uris, id)
	}
	for id := 2; id <= n; id += 2 {
		uris = append(uris, id)
	}
	want = slices.Clone(uris)
	for _, id := range uris {
		if acked, _ := f.listen(t, fmt.Sprintf("app://rows_show/%d", id)); len(acked) != 1 {
			t.Fatalf("listen %d: %v", id, acked)
		}
	}
	for round := range 3 {
		mu.Lock()
		ran = nil
		mu.Unlock()
		a.Changed("rows")
		waitIdle(t, a)
		mu.Lock()
		got := slices.Clone(ran)
		mu.Unlock()
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: re-ran %v, want the order the queries were made in, %v", round, got, want)
		}
	}
	f.close()
	waitEmpty(t, a)
}

// At the end of a round the worker that ended it hands each session's
// burst over itself (livedeliver.go, handOverNow); a session whose channel
// cannot take the whole burst gets a delivery goroutine for the rest,
// which waits for room, and counts as work for WaitIdle until it is done.
func TestRoundBurstLargerThanTheChannel(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	const subs, room = 30, 10
	st := newItemStore(subs)
	a := newLiveServer(t, st)
	f := newFakeClient(t, a, "narrow", room)
	var uris []string
	for id := 1; id <= subs; id++ {
		uris = append(uris, fmt.Sprintf("app://items_show/%d", id))
	}
	acked, stop := f.listen(t, uris...)
	if len(acked) != subs {
		t.Fatalf("acknowledged %d of %d", len(acked), subs)
	}
	defer stop()
	if got := f.notes(); len(got) != 0 {
		t.Fatalf("notifications before any change: %v", got)
	}
	for id := 1; id <= subs; id++ {
		st.set(id, "v2")
	}
	a.Changed("items")

	// The channel holds room; the rest waits in a delivery goroutine,
	// which WaitIdle waits for.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.WaitIdle(short); err == nil {
		t.Fatalf("WaitIdle returned with %d notifications the channel had no room for", subs-room)
	}
	heard := map[string]int{}
	deadline := time.After(10 * time.Second)
	for len(heard) < subs {
		select {
		case n := <-f.s.ch:
			if n.Method == mcp.MethodNotificationResourceUpdated {
				uri, _ := n.Params.AdditionalFields["uri"].(string)
				heard[uri]++
			}
		case <-deadline:
			t.Fatalf("heard %d of %d URIs", len(heard), subs)
		}
	}
	waitIdle(t, a)
	for _, uri := range uris {
		if heard[uri] != 1 {
			t.Errorf("%s: %d notifications, want 1", uri, heard[uri])
		}
	}
	if extra := f.notes(); len(extra) != 0 {
		t.Errorf("more notifications than changes: %v", extra)
	}
	if st := a.LiveStats(); st.Notified != subs || st.Pending != 0 {
		t.Errorf("LiveStats: %d notified, %d pending; want %d, 0", st.Notified, st.Pending, subs)
	}
}

// A conn delivers one way for its life: through its session's channel
// (listen streams, resources/subscribe on stdio and in process) or, for a
// Streamable HTTP session subscribing through HTTPHandler, on its GET
// stream. A session that asks for the other way while one is in use is
// refused, rather than having the notifications of the first way stranded
// (a review found them left in the outbox, with no deliverer).

// edgeSession is a fakeSession as mcp-go's Streamable HTTP would make it:
// one that can answer a request as an event stream.
type edgeSession struct{ *fakeSession }

func (edgeSession) UpgradeToSSEWhenReceiveNotification() {}

// newEdgeClient is newFakeClient for a Streamable HTTP session whose
// requests come through HTTPHandler.
func newEdgeClient(t *testing.T, a *Adapter, id string, buffer int) *fakeClient {
	s := &fakeSession{id: id, ch: make(chan mcp.JSONRPCNotification, buffer)}
	if err := a.Server().RegisterSession(context.Background(), edgeSession{s}); err != nil {
		t.Fatal(err)
	}
	f := &fakeClient{a: a, s: s, edge: true}
	t.Cleanup(f.close)
	return f
}

func TestLegacySubscribeBesideAListenIsRefused(t *testing.T) {
	const n = 5
	st := newItemStore(n + 1)
	a := newLiveServer(t, st)
	f := newEdgeClient(t, a, "edge-1", 4*n)
	var uris []string
	for id := 1; id <= n; id++ {
		uris = append(uris, fmt.Sprintf("app://items_show/%d", id))
	}
	if acked, _ := f.listen(t, uris...); len(acked) != n {
		t.Fatalf("listen acknowledged %v", acked)
	}
	before := a.LiveStats()

	err := f.subscribe("app://items_show/6")
	if err == nil || err.Code != mcp.INVALID_REQUEST || !strings.Contains(err.Message, "subscriptions/listen") {
		t.Fatalf("legacy subscribe beside a listen stream: %+v, want invalid request naming subscriptions/listen", err)
	}
	if after := a.LiveStats(); after.Subscriptions != before.Subscriptions || after.Sessions != before.Sessions {
		t.Fatalf("the refusal changed the registry: %+v, then %+v", before, after)
	}

	// The listen stream still hears every change.
	for id := 1; id <= n; id++ {
		st.set(id, "v2")
	}
	a.Changed("items")
	waitIdle(t, a)
	if got := f.take(); !slices.Equal(got, uris) {
		t.Fatalf("the listen stream heard %v, want %v (%+v)", got, uris, a.LiveStats())
	}
}

func TestListenBesideGETStreamSubscriptionsIsRefused(t *testing.T) {
	st := newItemStore(2)
	a := newLiveServer(t, st)
	f := newEdgeClient(t, a, "edge-2", 8)
	if err := f.subscribe("app://items_show/1"); err != nil {
		t.Fatalf("legacy subscribe: %+v", err)
	}
	before := a.LiveStats()
	acked, _ := f.listen(t, "app://items_show/2")
	if len(acked) != 0 {
		t.Fatalf("listen beside GET-stream subscriptions acknowledged %v, want none", acked)
	}
	if after := a.LiveStats(); after.Subscriptions != before.Subscriptions || after.Refused != before.Refused+1 {
		t.Fatalf("want the listen refused and nothing else changed: %+v, then %+v", before, after)
	}
	// Once the legacy subscription ends, the session may listen.
	if err := f.unsubscribe("app://items_show/1"); err != nil {
		t.Fatalf("unsubscribe: %+v", err)
	}
	waitIdle(t, a)
	if acked, _ := f.listen(t, "app://items_show/2"); len(acked) != 1 {
		t.Fatalf("listen after the legacy subscription ended acknowledged %v", acked)
	}
}
