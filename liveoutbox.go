package adapter

import (
	"slices"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// The outbox of a connection: its subscriptions with a notification
// pending.
//
// mcp-go hands notifications to a session through a channel buffered to
// 100, and drops a notification that does not fit. The adapter must not
// drop one: a subscriber would never learn that its data changed. So each
// connection queues its notifications in an outbox, which a goroutine of
// its own empties into the session while it is not empty, waiting when the
// channel is full (livedeliver.go).
//
// A subscription is queued at most once: more changes before delivery
// coalesce into the one notification, which is all a subscriber needs,
// since it carries nothing but the URI. A client that never reads
// therefore costs at most one queued entry per subscription (the cap
// bounds those), what its delivery goroutine took, and mcp-go's 100,
// however many writes happen.
//
// Every subscription has a slot among its connection's (sub.slot), where
// the outbox keeps what it needs of it: its notification, made at the
// first delivery and reused, and whether it is queued. So neither a re-run
// queueing notifications nor the delivery handing them over touches the
// subscriptions themselves, scattered in memory and written by other cores:
// on a fan-out, those misses were a tenth of the CPU. The notifications'
// params are kept side by side (conn.notes), so that handing a burst over
// reads them as a sweep of one array: reached through a pointer per slot,
// they cost the fan-out more than the sends themselves.

// outSlot is what a connection's outbox keeps of one subscription beside
// its notification (conn.notes). sb does not change, so that a delivery
// goroutine reads it without the lock, even after the subscription ended;
// gone does, atomically.
type outSlot struct {
	sb *sub
	// gone: the subscription ended (set under the conn's mutex). A
	// delivery that took its notification before gives it up: no
	// notification is handed over after the unsubscribe, or the end of
	// the listen stream, that ended it.
	gone atomic.Bool
}

// takeSlotLocked gives sb, a new subscription of c, its slot. r.mu is
// held.
func (c *conn) takeSlotLocked(sb *sub) {
	if n := len(c.freeSlots); n > 0 {
		sb.slot = c.freeSlots[n-1]
		c.freeSlots = c.freeSlots[:n-1]
	} else {
		sb.slot = c.nextSlot
		c.nextSlot++
	}
	e := &outSlot{sb: sb}
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(sb.slot) == len(c.slots) {
		c.slots = append(c.slots, nil)
		c.notes = append(c.notes, mcp.NotificationParams{})
		if int(sb.slot>>6) == len(c.pending) {
			c.pending = append(c.pending, 0)
		}
	}
	c.slots[sb.slot] = e
}

// releaseSlotLocked takes sb, which ended, out of the outbox and frees its
// slot. r.mu is held.
func (c *conn) releaseSlotLocked(sb *sub) {
	c.mu.Lock()
	if c.pendingLocked(sb.slot) {
		if i := slices.Index(c.queue, sb.slot); i >= 0 {
			c.queue = slices.Delete(c.queue, i, i+1)
		}
		c.pending[sb.slot>>6] &^= 1 << (sb.slot & 63)
	}
	c.slots[sb.slot].gone.Store(true)
	c.slots[sb.slot] = nil
	c.notes[sb.slot] = mcp.NotificationParams{}
	if c.slotEnded != nil {
		close(c.slotEnded)
		c.slotEnded = nil
	}
	c.mu.Unlock()
	c.freeSlots = append(c.freeSlots, sb.slot)
}

// pushLocked appends slot to c's outbox. c.mu is held.
func (c *conn) pushLocked(slot int32) {
	c.pending[slot>>6] |= 1 << (slot & 63)
	c.queue = append(c.queue, slot)
}

// pendingLocked reports whether slot is in c's outbox. c.mu is held.
func (c *conn) pendingLocked(slot int32) bool {
	return c.pending[slot>>6]&(1<<(slot&63)) != 0
}

// noteLocked is the notification of slot, its params made at its first
// delivery. c.mu is held.
func (c *conn) noteLocked(slot int32) mcp.JSONRPCNotification {
	p := &c.notes[slot]
	if p.AdditionalFields == nil {
		*p = c.slots[slot].sb.notificationParams()
	}
	return resourceUpdated(*p)
}

// outNote is a notification taken from an outbox, with the slot of the
// subscription it is of.
type outNote struct {
	note mcp.JSONRPCNotification
	e    *outSlot
}

// takeLocked empties the outbox into batch, as the notifications to hand
// over, and returns it. c.mu is held.
func (c *conn) takeLocked(batch []outNote) []outNote {
	for _, slot := range c.queue {
		batch = append(batch, outNote{note: c.noteLocked(slot), e: c.slots[slot]})
	}
	c.queue = c.queue[:0]
	clear(c.pending)
	return batch
}

// enqueueLocked queues a notification for ref, one of a query's
// subscriptions (never one that ended), unless one is pending, and starts
// its connection's delivery goroutine when none runs and the connection has
// somewhere to deliver, or holds it for the wave (liveburst.go). r.mu is
// held; the outbox itself is guarded by its conn's own mutex, so that
// delivery never waits for the registry, but while the conn is quiet
// (enqueueQuietLocked).
func (r *liveRegistry) enqueueLocked(ref subRef) {
	c := ref.c
	if c.quiet {
		r.enqueueQuietLocked(c, ref.slot)
		return
	}
	c.mu.Lock()
	if c.pendingLocked(ref.slot) {
		c.mu.Unlock()
		return
	}
	c.pushLocked(ref.slot)
	start := !c.delivering && r.canDeliver(c)
	hold := false
	if start && len(c.queue) < holdBurst && r.waveLocked() {
		// No delivery under way, and none starts before the flush or a
		// full burst: quiet.
		start, hold, c.quiet = false, !c.held, true
	}
	c.delivering = c.delivering || start
	c.mu.Unlock()
	if hold {
		r.holdLocked(c)
	}
	if start {
		r.startDelivery(c)
	}
}

// enqueueQuietLocked is enqueueLocked for a quiet conn: held, with no
// delivery under way, so that its outbox is the registry's alone. Its
// delivery starts as enqueueLocked's would: once the outbox holds
// holdBurst, or the wave is over.
func (r *liveRegistry) enqueueQuietLocked(c *conn, slot int32) {
	if c.pendingLocked(slot) {
		return
	}
	c.pushLocked(slot)
	if len(c.queue) < holdBurst && r.waveLocked() || !r.canDeliver(c) {
		return
	}
	c.mu.Lock()
	c.delivering = true
	c.mu.Unlock()
	if c.streamID != "" {
		r.startDelivery(c)
		return
	}
	// Its burst is whole: the goroutine that queued it hands it over once
	// it has released the registry's mutex, as it does the wave's last
	// (takeReadyLocked), rather than a goroutine started for it.
	c.quiet = false
	r.deliverers.Add(1)
	r.held.ready = append(r.held.ready, c)
}

// notificationParams are the params of sb's notifications/resources/updated.
// Its maps are made once, the _meta shared by every subscription of sb's
// stream; the conn's mutex is held, and transports only read them.
func (sb *sub) notificationParams() mcp.NotificationParams {
	st := sb.st
	if id := st.id; id != nil && st.meta == nil {
		// On a listen stream the notification carries the stream's
		// subscription id: Streamable HTTP tags what it sends on the
		// stream itself, stdio and in-process sessions do not, and the
		// client needs it on every transport.
		st.meta = map[string]any{mcp.MetaKeySubscriptionID: id}
	}
	return mcp.NotificationParams{Meta: st.meta, AdditionalFields: map[string]any{"uri": sb.uri}}
}

// resourceUpdated is the notifications/resources/updated with params p.
func resourceUpdated(p mcp.NotificationParams) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{
		JSONRPC:      mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: mcp.MethodNotificationResourceUpdated, Params: p},
	}
}
