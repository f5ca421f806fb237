package adapter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplive/adapter/internal/draw"
	"github.com/mcplive/adapter/internal/leakcheck"
)

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
