package adapter

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcplive/adapter/internal/leakcheck"
	"pgregory.net/rapid"
)

// TestLiveRapid interleaves, at random, subscriptions (legacy and listen
// streams), unsubscriptions, writes that change results or not, stream
// ends, disconnects and reading of notifications, while re-runs and
// deliveries run in the background. Its clients behave as agents do: they
// read a URI when they subscribe to it and again whenever they hear it
// changed. At the end, once the registry is idle and every notification has
// been read, every live subscription's last read must equal what a read
// returns now (no change went unnoticed), and after everyone disconnects
// the registry must hold nothing and leave no goroutine behind.
func TestLiveRapid(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	rapid.Check(t, func(rt *rapid.T) {
		m := newLiveModel(rt)
		rt.Repeat(map[string]func(*rapid.T){
			"subscribe":   m.subscribe,
			"listen":      m.listen,
			"unsubscribe": m.unsubscribe,
			"endStream":   m.endStream,
			"write":       m.write,
			"delete":      m.delete,
			"read":        m.read,
			"idle":        m.idle,
			"reconnect":   m.reconnect,
			"": func(t *rapid.T) {
				s := m.a.LiveStats()
				if s.Pending > s.Subscriptions {
					t.Fatalf("%d notifications pending for %d subscriptions", s.Pending, s.Subscriptions)
				}
			},
		})
		m.finish(rt)
	})
}

const (
	rapidItems    = 4
	rapidSessions = 3
)

var rapidURIs = func() []string {
	uris := []string{"app://items_count", "app://items_count?min=1"}
	for i := 1; i <= rapidItems+1; i++ { // one more than exists at first
		uris = append(uris, fmt.Sprintf("app://items_show/%d", i), fmt.Sprintf("app://items_show/%%3%d", i))
	}
	return uris
}()

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
	t       testingT
	st      *itemStore
	a       *Adapter
	clients []*modelClient
}

func newLiveModel(t *rapid.T) *liveModel {
	st := newItemStore(rapidItems)
	m := &liveModel{t: t, st: st, a: newLiveServer(t, st, WithSubscriptionCap(8))}
	for i := range rapidSessions {
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

func (m *liveModel) client(t *rapid.T) *modelClient {
	return m.clients[rapid.IntRange(0, rapidSessions-1).Draw(t, "client")]
}

func (m *liveModel) subscribe(t *rapid.T) {
	c := m.client(t)
	uri := rapid.SampledFrom(rapidURIs).Draw(t, "uri")
	k := subKey{uri: uri}
	_, had := c.subs[k]
	if err := c.f.subscribe(uri); err == nil && !had {
		// The first run saw the store as it is: writes are actions of
		// their own. Subscribing again changes nothing.
		c.subs[k] = m.current(uri)
	}
}

func (m *liveModel) listen(t *rapid.T) {
	c := m.client(t)
	uris := rapid.SliceOfNDistinct(rapid.SampledFrom(rapidURIs), 1, 4, rapid.ID).Draw(t, "uris")
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

func (m *liveModel) unsubscribe(t *rapid.T) {
	c := m.client(t)
	uri := rapid.SampledFrom(rapidURIs).Draw(t, "uri")
	if err := c.f.unsubscribe(uri); err != nil {
		t.Fatalf("unsubscribe %s: %+v", uri, err)
	}
	delete(c.subs, subKey{uri: uri})
}

func (m *liveModel) endStream(t *rapid.T) {
	c := m.client(t)
	if len(c.streams) == 0 {
		t.Skip("no stream")
	}
	ids := make([]string, 0, len(c.streams))
	for id := range c.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := rapid.SampledFrom(ids).Draw(t, "stream")
	c.streams[id]()
	delete(c.streams, id)
	for k := range c.subs {
		if k.stream == id {
			delete(c.subs, k)
		}
	}
}

func (m *liveModel) write(t *rapid.T) {
	id := rapid.IntRange(1, rapidItems+1).Draw(t, "id")
	v := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "value")
	m.st.set(id, v)
	if rapid.Bool().Draw(t, "table") {
		m.a.Changed("items")
	} else {
		m.a.Changed(fmt.Sprintf("items/%d", id))
	}
}

func (m *liveModel) delete(t *rapid.T) {
	id := rapid.IntRange(1, rapidItems+1).Draw(t, "id")
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
func (m *liveModel) read(t *rapid.T) {
	c := m.client(t)
	m.idle(t)
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

func (m *liveModel) idle(t *rapid.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.a.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

// reconnect drops a client's session, with everything it held, and opens
// a new one.
func (m *liveModel) reconnect(t *rapid.T) {
	i := rapid.IntRange(0, rapidSessions-1).Draw(t, "client")
	c := m.clients[i]
	c.f.close()
	m.clients[i] = m.connect(i, c.gen+1)
}

func (m *liveModel) finish(t *rapid.T) {
	for {
		m.idle(t)
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
				t.Fatalf("client %d, %+v: last read %q, now %q, and no notification", i, k, seen, now)
			}
		}
		held += len(c.subs)
	}
	// Ended streams end on the server when it sees their requests end.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.a.live.waitFor(ctx, func() bool { return m.a.live.subs == held }); err != nil {
		t.Fatalf("registry holds %d subscriptions, the clients %d", m.a.LiveStats().Subscriptions, held)
	}
	for _, c := range m.clients {
		c.f.close()
	}
	waitEmpty(t, m.a)
}
