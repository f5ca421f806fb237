package adapter_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/internal/leakcheck"
)

// TestBatchNoLostWakeUp is the no-lost-wake-up property with batched
// re-runs: random subscriptions (both eras), writes of one item or of the
// table, deletions, unsubscriptions, batch forms that fail as a whole,
// answer with the wrong number of results or panic, and reads, while
// re-runs (batched, split into single runs, or falling back to them) and
// deliveries run in the background. Its clients behave as agents do: they
// read a URI when they subscribe to it and again whenever they hear it
// changed. At the end, once the registry is idle and every notification is
// read, every subscription's last read must equal what a read returns now,
// and the registry must hold nothing once the clients are gone.
//
// Each seed replays one sequence; a failure names its seed.
func TestBatchNoLostWakeUp(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	batches := 0
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			m := newBatchModel(t, uint64(seed))
			for range 80 {
				m.step()
			}
			m.finish()
			batches += m.batches
		})
	}
	if batches < seeds {
		t.Errorf("%d calls of the batch form in %d sequences: the property hardly met a batch", batches, seeds)
	}
}

const (
	modelItems   = 5
	modelClients = 3
)

// watched is one subscription as its client sees it, with what the client
// last read of it.
type watched struct {
	sub  *adaptertest.Subscription
	last map[string]string // by URI
}

type batchModel struct {
	t       *testing.T
	rng     *rand.Rand
	st      *batchStore
	a       *adapter.Adapter
	clients []*adaptertest.Client
	subs    [][]*watched // by client
	batches int          // calls of the batch form
}

func newBatchModel(t *testing.T, seed uint64) *batchModel {
	st := newBatchStore(modelItems)
	st.sizes = make(chan int, 1<<16)
	st.yield = true
	a := adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithLogger(slog.New(slog.DiscardHandler)))
	adapter.Live(a, "items_show", "One item.", st.show, adapter.WithBatch(st.showMany))
	m := &batchModel{t: t, rng: rand.New(rand.NewPCG(seed, 17)), st: st, a: a, subs: make([][]*watched, modelClients)}
	for i := range modelClients {
		var opts []adaptertest.Option
		if i == 0 {
			opts = append(opts, adaptertest.Legacy())
		}
		m.clients = append(m.clients, adaptertest.New(t, a, opts...))
	}
	return m
}

func (m *batchModel) uri(id int) string { return fmt.Sprintf("app://items_show/%d", id) }

// current is what a client reading uri gets now.
func (m *batchModel) current(c *adaptertest.Client, uri string) string {
	text, err := c.Read(uri)
	if err != nil {
		return "error: " + err.Error()
	}
	return text
}

func (m *batchModel) step() {
	switch op := m.rng.IntN(10); {
	case op < 2:
		m.subscribe()
	case op < 3:
		m.unsubscribe()
	case op < 6:
		m.write()
	case op < 7:
		m.st.setMode([]batchMode{batchOK, batchOK, batchFails, batchShort, batchShortErrs, batchPanics}[m.rng.IntN(6)])
	case op < 9:
		m.read(m.rng.IntN(modelClients))
	default:
		waitIdle(m.t, m.a)
	}
	m.batches += len(m.st.calls())
}

func (m *batchModel) subscribe() {
	i := m.rng.IntN(modelClients)
	c := m.clients[i]
	var uris []string
	for range 1 + m.rng.IntN(3) {
		if u := m.uri(1 + m.rng.IntN(modelItems+1)); !slices.Contains(uris, u) {
			uris = append(uris, u)
		}
	}
	sub, err := c.Listen(uris...)
	if err != nil {
		m.t.Fatalf("listen %q: %v", uris, err)
	}
	w := &watched{sub: sub, last: map[string]string{}}
	for _, u := range sub.Acknowledged {
		// The first run saw the store as it is: writes are steps of
		// their own.
		w.last[u] = m.current(c, u)
	}
	m.subs[i] = append(m.subs[i], w)
}

func (m *batchModel) unsubscribe() {
	i := m.rng.IntN(modelClients)
	if len(m.subs[i]) == 0 {
		return
	}
	k := m.rng.IntN(len(m.subs[i]))
	w := m.subs[i][k]
	if m.clients[i].Version() != adaptertest.ModernVersion {
		// Legacy subscriptions of one URI are one on the server, which
		// unsubscribing ends for all: end every subscription of the
		// client.
		for _, x := range m.subs[i] {
			x.sub.Close()
		}
		m.subs[i] = nil
		return
	}
	w.sub.Close()
	m.subs[i] = slices.Delete(m.subs[i], k, k+1)
}

func (m *batchModel) write() {
	id := 1 + m.rng.IntN(modelItems+1)
	name := []string{"", "a", "b", "c"}[m.rng.IntN(4)] // "" deletes
	m.st.set(int64(id), name)
	if m.rng.IntN(2) == 0 {
		m.a.Changed("items")
	} else {
		m.a.Changed(itemKey(int64(id)))
	}
}

// read makes client i read what it heard, once the registry is idle: a
// notification says the result differs from the one last reported, and a
// read at any other time may see a state that a burst of changes then
// coalesces away.
func (m *batchModel) read(i int) {
	c := m.clients[i]
	c.WaitIdle()
	for _, w := range m.subs[i] {
		for _, u := range w.sub.Take() {
			if _, ok := w.last[u]; ok {
				w.last[u] = m.current(c, u)
			}
		}
	}
}

func (m *batchModel) finish() {
	for i := range m.clients {
		m.read(i)
	}
	for i, c := range m.clients {
		for _, w := range m.subs[i] {
			for u, seen := range w.last {
				if now := m.current(c, u); seen != now {
					m.t.Fatalf("client %d, %s: last read %s, now %s, and no notification", i, u, seen, now)
				}
			}
		}
	}
	for i := range m.subs {
		for _, w := range m.subs[i] {
			w.sub.Close()
		}
	}
	waitIdle(m.t, m.a)
	if st := m.a.LiveStats(); st.Subscriptions != 0 || st.Queries != 0 || st.Pending != 0 {
		m.t.Fatalf("after every subscription ended: %+v", st)
	}
}
