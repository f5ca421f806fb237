package adapter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/draw"
	"github.com/mcplive/adapter/internal/leakcheck"
)

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
