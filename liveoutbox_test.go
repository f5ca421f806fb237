package adapter

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mcplive/adapter/internal/leakcheck"
)

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
