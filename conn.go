package adapter

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mcplive/adapter/internal/digest"
)

// delivery is the registry's part in getting notifications out of the
// connections' outboxes: the bursts held for the round, the delivery
// goroutines, and the legacy sessions served on GET streams. The
// registry's mutex guards held, streamConns and notifiedGone; gets has its
// own mutex; the counters are atomic; batches and streamWriteTimeout need
// none.
type delivery struct {
	// batches are the arrays delivery goroutines take outboxes in
	// (*[]outNote): one per goroutine alive, kept for the next.
	batches sync.Pool
	held    heldConns // outboxes waiting for the round
	// streamConns are the conns delivered to on GET streams, by session
	// ID, and gets the open GET streams (httpstream.go).
	streamConns map[string]*conn
	gets        getStreams
	// streamWriteTimeout bounds a write into a GET stream; tests shorten
	// it.
	streamWriteTimeout time.Duration
	// deliverers counts the delivery goroutines alive. It grows under the
	// registry's mutex and shrinks without it; the last to leave signals.
	deliverers atomic.Int64
	// waiting counts the deliveries waiting for room in a session's
	// channel: a client that does not read.
	waiting atomic.Int64
	// notifiedGone counts the notifications handed to the sessions of
	// conns no longer held. Each conn counts its own (conn.notified), so
	// that delivery goroutines on different cores share no counter.
	notifiedGone uint64
	// events is the store of GET streams' events when HTTPHandler is given
	// none (WithEventStore); eventStores every store HTTPHandlers use,
	// whose events of a session go when it ends.
	events      server.EventStore
	eventStores []server.EventStore
}

// A conn is one session's part in the registry: what its subscriptions
// count against (the cap), and its outbox of notifications with the
// delivery that empties it (see "Who holds a subscription" in
// subscribe.go). Its mutex guards the outbox, but while the conn is under the registry
// (below); the registry's mutex guards the rest.
type conn struct {
	session server.ClientSession
	// done is closed when the session unregisters, which frees a delivery
	// blocked on a session no one reads any more.
	done    chan struct{}
	closed  bool
	streams map[*stream]struct{} // its listen streams
	legacy  *stream              // resources/subscribe, made on first use
	// n counts the subscriptions held and those being made, for the cap.
	n int
	// held: its notifications wait for the round of re-runs.
	held bool
	// versioned: a stream of it asks for versions (stream.versions), so
	// that a fan-out looks no further than the conn for the streams that
	// do not. Guarded by the registry's mutex; never cleared.
	versioned bool
	// underRegistry: held, with no delivery under way. Only
	// goroutines holding the registry's mutex touch the outbox then, so
	// enqueueLocked queues without taking mu: on a fan-out, a lock for
	// each of ten thousand notifications. Whatever ends it (a flush, or a
	// delivery starting) clears it under the registry's mutex before a
	// delivery may touch the outbox.
	underRegistry bool
	// streamID, when not "", is the ID of a legacy Streamable HTTP session
	// served through HTTPHandler: its notifications go to the session's GET
	// stream (httpstream.go), not to its channel. Set once, before any
	// listen stream, under both the registry's mutex and mu, so that
	// either lock reads it.
	streamID string

	// client is the client key (Adapter.clientKey) of its last
	// subscription: the next ones, which almost always have the same,
	// share its string rather than keep a copy each (sameClient).
	client string

	// nextSlot and freeSlots hand out the slots of its subscriptions
	// (sub.slot), by which the outbox knows those pending.
	nextSlot  int32
	freeSlots []int32

	// mu guards the outbox: slots, queue, pending,
	// delivering, dropLater and notified, except while underRegistry, when the
	// registry's mutex guards queue and pending. Lock order: the
	// registry's mutex, then this.
	mu    sync.Mutex
	slots []*outSlot // by sub.slot
	// notes are the params of the slots' notifications, by sub.slot,
	// made at their first delivery; side by side, so that handing a burst
	// over reads them in one sweep, as a slice of notifications is sent.
	// The rest of a notification is the same for all (resourceUpdated).
	notes []mcp.NotificationParams
	// versions are the versions the slots' next notifications carry, by
	// sub.slot, for streams that ask for them (setVersionLocked): digests,
	// spelled out (versionText) only when a notification is made, so that
	// a subscription holds no text of its own.
	versions []slotVersion
	queue    []int32 // slots with a notification pending, oldest first
	// pending has bit i set when slot i is in queue.
	pending    []uint64
	delivering bool // a delivery goroutine is running
	// dropLater: the registry would have forgotten the conn but for its
	// delivery goroutine, which does it as it leaves.
	dropLater bool
	notified  uint64 // notifications handed to the session
	// slotEnded, made by a delivery that waits for room in the session's
	// channel, is closed when a subscription of the conn ends, so that the
	// delivery gives up the notification if it was that subscription's.
	slotEnded chan struct{}
}

// connLocked returns the conn of session, making it when there is none.
func (r *liveRegistry) connLocked(session server.ClientSession) *conn {
	c := r.conns[session]
	if c == nil {
		c = &conn{session: session, done: make(chan struct{}), streams: make(map[*stream]struct{})}
		r.conns[session] = c
	}
	return c
}

// sameClient returns key, c's own copy when c has one equal to it. r.mu
// is held.
func (c *conn) sameClient(key string) string {
	if key == c.client {
		return c.client
	}
	c.client = key
	return key
}

// maybeDropConnLocked forgets c once it holds nothing: no subscription, no
// stream and no delivery under way.
func (r *liveRegistry) maybeDropConnLocked(c *conn) {
	if c.n > 0 || len(c.streams) > 0 || r.conns[c.session] != c {
		return
	}
	c.mu.Lock()
	delivering, notified := c.delivering, c.notified
	c.dropLater = delivering
	c.mu.Unlock()
	if delivering {
		return
	}
	delete(r.conns, c.session)
	if c.streamID != "" && r.streamConns[c.streamID] == c {
		delete(r.streamConns, c.streamID)
	}
	r.notifiedGone += notified
	if c.legacy != nil {
		c.legacy.ended = true
		c.legacy = nil
	}
	r.signalLocked()
}

// The outbox of a connection: its subscriptions with a notification
// pending.
//
// mcp-go hands notifications to a session through a channel buffered to
// 100, and drops a notification that does not fit. The adapter must not
// drop one: a subscriber would never learn that its data changed. So each
// connection queues its notifications in an outbox, which a goroutine of
// its own empties into the session while it is not empty, waiting when the
// channel is full.
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
	c.setVersionLocked(sb.slot, slotVersion{})
	if c.slotEnded != nil {
		close(c.slotEnded)
		c.slotEnded = nil
	}
	c.mu.Unlock()
	c.freeSlots = append(c.freeSlots, sb.slot)
}

// slotVersion is the version a slot's next notification carries, if set.
type slotVersion struct {
	d   digest.Digest
	set bool
}

// versionOf is the slotVersion of a query's result, q.version: none
// while it is not known (a subscription whose stream came to ask for
// versions after its query's last run: kept.go).
func versionOf(q *query) slotVersion {
	v, ok := q.version()
	return slotVersion{d: v, set: ok}
}

// setVersionLocked makes v the version the next notification of slot
// carries; the zero slotVersion is none. Versions are kept apart from the
// slots, for the streams that ask for them alone: most never do. Guarded
// as the outbox is.
func (c *conn) setVersionLocked(slot int32, v slotVersion) {
	if !v.set && int(slot) >= len(c.versions) {
		return
	}
	if int(slot) >= len(c.versions) {
		c.versions = append(c.versions, make([]slotVersion, int(slot)+1-len(c.versions))...)
	}
	c.versions[slot] = v
}

// hasVersionLocked reports whether the next notification of slot carries
// a version. Guarded as the outbox is.
func (c *conn) hasVersionLocked(slot int32) bool {
	return int(slot) < len(c.versions) && c.versions[slot].set
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
	if c.hasVersionLocked(slot) {
		v := versionText(c.versions[slot].d)
		// Its own _meta, with the version: the stream's is shared.
		withVersion := *p
		withVersion.Meta = make(map[string]any, len(p.Meta)+1)
		maps.Copy(withVersion.Meta, p.Meta)
		withVersion.Meta[MetaVersion] = v
		return resourceUpdated(withVersion)
	}
	return resourceUpdated(*p)
}

// uriOnlyLocked reports whether the next notification of slot carries
// its URI alone: no subscription id, no version. c.mu is held.
func (c *conn) uriOnlyLocked(slot int32) bool {
	return c.slots[slot].sb.st.id == nil && !c.hasVersionLocked(slot)
}

// outNote is a notification taken from an outbox, with the slot of the
// subscription it is of. A notification for a GET stream that carries the
// URI alone (uriOnly) is encoded from the subscription's URI: its params,
// a Go map, are never made.
type outNote struct {
	note    mcp.JSONRPCNotification
	e       *outSlot
	uriOnly bool
}

// takeLocked empties the outbox into batch, as the notifications to hand
// over, and returns it. c.mu is held.
func (c *conn) takeLocked(batch []outNote) []outNote {
	for _, slot := range c.queue {
		if c.streamID != "" && c.uriOnlyLocked(slot) {
			batch = append(batch, outNote{e: c.slots[slot], uriOnly: true})
			continue
		}
		batch = append(batch, outNote{note: c.noteLocked(slot), e: c.slots[slot]})
	}
	c.queue = c.queue[:0]
	clear(c.pending)
	return batch
}

// enqueueLocked queues a notification for ref, one of a query's
// subscriptions (never one that ended), unless one is pending, and starts
// its connection's delivery goroutine when none runs and the connection has
// somewhere to deliver, or holds it for the round. r.mu is
// held; the outbox itself is guarded by its conn's own mutex, so that
// delivery never waits for the registry, but while the conn is under the registry
// (enqueueUnderRegistryLocked).
func (r *liveRegistry) enqueueLocked(ref subRef) {
	c := ref.c
	var version slotVersion
	if c.versioned && ref.sb.st.versions {
		version = versionOf(ref.sb.q)
	}
	if c.underRegistry {
		c.setVersionLocked(ref.slot, version)
		r.enqueueUnderRegistryLocked(c, ref.slot)
		return
	}
	c.mu.Lock()
	c.setVersionLocked(ref.slot, version)
	if c.pendingLocked(ref.slot) {
		c.mu.Unlock()
		return
	}
	c.pushLocked(ref.slot)
	start := !c.delivering && r.canDeliver(c)
	hold := false
	if start && len(c.queue) < holdBurst && r.rerunningLocked() {
		// No delivery under way, and none starts before the flush or a
		// full burst: under the registry.
		start, hold, c.underRegistry = false, !c.held, true
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

// enqueueUnderRegistryLocked is enqueueLocked for a conn under the registry: held, with no
// delivery under way, so that its outbox is the registry's alone. Its
// delivery starts as enqueueLocked's would: once the outbox holds
// holdBurst, or the round is over.
func (r *liveRegistry) enqueueUnderRegistryLocked(c *conn, slot int32) {
	if c.pendingLocked(slot) {
		return
	}
	c.pushLocked(slot)
	if len(c.queue) < holdBurst && r.rerunningLocked() || !r.canDeliver(c) {
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
	// it has released the registry's mutex, as it does the round's last
	// (takeReadyLocked), rather than a goroutine started for it.
	c.underRegistry = false
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

// Bursts: notifications wait for the round of re-runs they belong to.
//
// A change that re-runs many queries notifies their subscribers one re-run
// at a time. Handed over as they come, a session's notifications would
// trickle in, and each would start its connection's delivery goroutine
// again and wake its transport again: on the fan-out benchmark, fifteen
// hundred goroutines an op for 157 sessions. So while re-runs are running
// or queued (a round), a connection whose outbox was empty holds its
// notifications, and its delivery starts when the round ends, or when its
// outbox holds holdBurst of them, or holdMax after the first was held,
// whichever comes first: one burst per session and round, most of the time,
// and never more than holdMax late for the round.
//
// Outside a round (the last re-run of one, or a subscription's first run
// that differs from a shared query's state) delivery starts at once.

const (
	// holdBurst is how many notifications a held outbox fills before it
	// is delivered anyway: the default subscription cap, so that a
	// session's whole burst waits for its round, and within mcp-go's
	// channel of 100, so that the flush hands it over without waiting.
	holdBurst = DefaultSubscriptionCap
	// holdMax bounds how long a notification is held while the round goes
	// on.
	holdMax = 5 * time.Millisecond
)

// heldConns are the connections whose notifications wait for the round.
type heldConns struct {
	conns []*conn
	// ready are the held connections delivered to through their session's
	// channel whose outboxes are left to the goroutine that made them
	// ready, to hand over with the registry's mutex released
	// (deliverReady): those of the flush, and those whose burst filled
	// during the round (enqueueUnderRegistryLocked). Each counts as a delivery
	// under way.
	ready []*conn
	// timer flushes them holdMax after the first was held; made once and
	// reset.
	timer *time.Timer
}

// rerunningLocked reports whether re-runs are running or waiting.
func (r *liveRegistry) rerunningLocked() bool {
	return r.inflight > 0 || r.runq.n > 0
}

// holdLocked makes c wait for the round.
func (r *liveRegistry) holdLocked(c *conn) {
	c.held = true
	r.held.conns = append(r.held.conns, c)
	if len(r.held.conns) > 1 {
		return
	}
	if r.held.timer == nil {
		r.held.timer = time.AfterFunc(holdMax, r.flushHeld)
	} else {
		r.held.timer.Reset(holdMax)
	}
}

func (r *liveRegistry) flushHeld() {
	r.mu.Lock()
	r.flushHeldLocked()
	ready := r.takeReadyLocked(nil)
	r.mu.Unlock()
	r.deliverReady(ready)
}

// flushHeldLocked starts the delivery of every held connection: a
// goroutine for one served on GET streams; for the others, whose session
// takes notifications through a channel, the goroutine that flushed hands
// them over itself, once it has released the registry's mutex
// (takeReadyLocked, deliverReady): one tight loop over the sessions, as
// the burst is, rather than a goroutine started for each.
func (r *liveRegistry) flushHeldLocked() {
	if len(r.held.conns) == 0 {
		return
	}
	r.held.timer.Stop() // when it already fired, its flush finds nothing
	for i, c := range r.held.conns {
		r.held.conns[i] = nil
		c.held, c.underRegistry = false, false
		c.mu.Lock()
		start := !c.delivering && len(c.queue) > 0 && r.canDeliver(c)
		c.delivering = c.delivering || start
		c.mu.Unlock()
		switch {
		case !start:
		case c.streamID != "":
			r.startDelivery(c)
		default:
			r.deliverers.Add(1)
			r.held.ready = append(r.held.ready, c)
		}
	}
	r.held.conns = r.held.conns[:0]
}

// takeReadyLocked takes the connections left to the caller to deliver to
// (heldConns.ready), appended to dst: a worker's own array (job.ready),
// which it delivers from with the registry's mutex released while the
// registry's fills again.
func (r *liveRegistry) takeReadyLocked(dst []*conn) []*conn {
	if len(r.held.ready) == 0 {
		return dst
	}
	dst = append(dst, r.held.ready...)
	clear(r.held.ready)
	r.held.ready = r.held.ready[:0]
	return dst
}

// startReadyLocked starts a delivery goroutine for each connection left to
// the caller to deliver to (takeReadyLocked), by a caller that will not
// deliver itself.
func (r *liveRegistry) startReadyLocked() {
	for _, c := range r.takeReadyLocked(nil) {
		go r.deliver(c)
	}
}

// The delivery goroutine of a connection empties its outbox
// into the session, a whole outbox at a time: it takes the
// outbox under one lock and hands the notifications over outside it. A
// subscription it took is pending no more, so that a change from then on
// queues a notification again. It gives up a notification when its listen
// stream ends (the request's context) or its session unregisters
// (conn.done), and exits as soon as the outbox is empty, without the
// registry's mutex, which the re-runs contend for, unless the connection
// is to be forgotten.

// startDelivery starts the delivery goroutine of c, marked delivering;
// c is under the registry no more. r.mu is held.
func (r *liveRegistry) startDelivery(c *conn) {
	c.underRegistry = false
	r.deliverers.Add(1)
	go r.deliver(c)
}

// deliver is the delivery goroutine of c: it empties c's outbox into its
// session, oldest first, and exits when the outbox is empty, or when c is
// served on GET streams and none is open (the next to open restarts it).
func (r *liveRegistry) deliver(c *conn) {
	held := r.batches.Get().(*[]outNote)
	batch := (*held)[:0]
	var sent uint64 // handed over since c.mu was last held
	for {
		c.mu.Lock()
		c.notified += sent
		if len(c.queue) == 0 || !r.canDeliver(c) {
			c.delivering = false
			drop := c.dropLater
			c.mu.Unlock()
			*held = batch
			r.batches.Put(held)
			r.leave(c, drop)
			return
		}
		batch = c.takeLocked(batch[:0])
		onStream := c.streamID != ""
		c.mu.Unlock()

		if onStream {
			sent = r.writeToStream(c, batch)
		} else {
			sent = r.handOver(c, batch)
		}
		clear(batch)
	}
}

// deliverReady hands the outboxes of ready, connections marked delivering
// and counted (takeReadyLocked), to their sessions' channels from the
// calling goroutine, without waiting: a connection whose channel is full
// gets a delivery goroutine for the rest, which waits.
func (r *liveRegistry) deliverReady(ready []*conn) {
	for _, c := range ready {
		if done, drop := handOverNow(c); done {
			r.leave(c, drop)
		} else {
			go r.deliver(c)
		}
	}
}

// handOverNow hands c's outbox, oldest first, to its session's channel
// while the channel takes it without waiting. It reports done when the
// outbox is empty, or the channel closed (the transport is gone), and c no
// longer delivering; else what is left waits for a delivery goroutine. drop
// is deliver's: the registry wants c forgotten. Sending under c's mutex
// never waits: a full channel ends the loop.
func handOverNow(c *conn) (done, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, closed := sendQueuedLocked(channelFor(c), c)
	c.notified += uint64(n)
	if closed {
		n = len(c.queue)
	}
	if n == len(c.queue) {
		clear(c.pending)
		c.queue = c.queue[:0]
	} else {
		for _, slot := range c.queue[:n] {
			c.pending[slot>>6] &^= 1 << (slot & 63)
		}
		c.queue = c.queue[:copy(c.queue, c.queue[n:])]
		return false, false
	}
	c.delivering = false
	return true, c.dropLater
}

// channelFor is the channel of c's session, made ready to carry
// notifications: what mcp-go does before it sends one itself, so that a
// POST under way answers as an event stream, which can carry it.
func channelFor(c *conn) chan<- mcp.JSONRPCNotification {
	if up, ok := c.session.(server.SessionWithStreamableHTTPConfig); ok {
		up.UpgradeToSSEWhenReceiveNotification()
	}
	return c.session.NotificationChannel()
}

// sendQueuedLocked hands c's queued notifications, oldest first, to ch
// while it has room, and returns how many it handed over; closed reports
// a closed channel. c.mu is held.
func sendQueuedLocked(ch chan<- mcp.JSONRPCNotification, c *conn) (n int, closed bool) {
	defer func() {
		if recover() != nil {
			closed = true
		}
	}()
	for _, slot := range c.queue {
		select {
		case ch <- c.noteLocked(slot):
			n++
		default:
			return n, false
		}
	}
	return n, false
}

// trySend hands n to a session's channel if it has room; closed reports a
// closed channel.
func trySend(ch chan<- mcp.JSONRPCNotification, n mcp.JSONRPCNotification) (sent, closed bool) {
	defer func() {
		if recover() != nil {
			sent, closed = false, true
		}
	}()
	select {
	case ch <- n:
		return true, false
	default:
		return false, false
	}
}

// leave ends a delivery goroutine: drop says that the registry wanted to
// forget its connection while it delivered. The last to leave wakes
// whoever waits for the registry to be idle.
func (r *liveRegistry) leave(c *conn, drop bool) {
	if drop {
		r.mu.Lock()
		r.maybeDropConnLocked(c)
		if r.deliverers.Add(-1) == 0 {
			r.signalLocked()
		}
		r.mu.Unlock()
		return
	}
	if r.deliverers.Add(-1) == 0 {
		r.mu.Lock()
		r.signalLocked()
		r.mu.Unlock()
	}
}

// canDeliver reports whether c has somewhere to deliver to now: its
// session's channel, or for a conn served on GET streams, an open one.
func (r *liveRegistry) canDeliver(c *conn) bool {
	return c.streamID == "" || r.gets.newest(c.streamID) != nil
}

// attachStream makes gs, a GET stream that mcp-go just opened, a place to
// deliver to, and starts the delivery of what waited for one.
func (r *liveRegistry) attachStream(gs *getStream) {
	r.gets.add(gs)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.streamConns[gs.sessionID]
	if c == nil {
		return
	}
	if gs.catchUp {
		// The client resumed from an event it cannot be told what
		// followed: it hears of everything it watches, and re-reads.
		r.catchUpLocked(c)
	}
	c.mu.Lock()
	start := !c.delivering && len(c.queue) > 0
	c.delivering = c.delivering || start
	c.mu.Unlock()
	if start {
		r.startDelivery(c)
	}
}

// catchUpLocked queues a notification for every subscription c holds.
func (r *liveRegistry) catchUpLocked(c *conn) {
	if c.legacy == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sb := range c.legacy.subs {
		if c.legacy.versions {
			c.setVersionLocked(sb.slot, versionOf(sb.q))
		}
		if !c.pendingLocked(sb.slot) {
			c.pushLocked(sb.slot)
		}
	}
}

// subscribedURIs are the URIs whose resources/subscribe subscriptions the
// session of sessionID, delivered to on GET streams, holds.
func (r *liveRegistry) subscribedURIs(sessionID string) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.streamConns[sessionID]
	if c == nil || c.legacy == nil {
		return nil
	}
	uris := make(map[string]bool, len(c.legacy.subs))
	for uri := range c.legacy.subs {
		uris[uri] = true
	}
	return uris
}

// eventStore is the store HTTPHandler keeps GET streams' events in when it
// is given none, made on first use, and adds store to those whose events
// of a session go when the session ends.
func (r *liveRegistry) useEventStore(store server.EventStore) server.EventStore {
	r.mu.Lock()
	defer r.mu.Unlock()
	if store == nil {
		if r.events == nil {
			r.events = NewEventStore(0)
		}
		store = r.events
	}
	if !slices.Contains(r.eventStores, store) {
		r.eventStores = append(r.eventStores, store)
	}
	return store
}

// purgeEvents forgets the GET streams' events of a session that ended.
func (r *liveRegistry) purgeEvents(sessionID string) {
	r.mu.Lock()
	stores := slices.Clone(r.eventStores)
	r.mu.Unlock()
	for _, store := range stores {
		if err := store.PurgeSession(context.Background(), sessionID); err != nil {
			r.a.logger.Warn("adapter: forgetting a session's events failed", "error", err)
		}
	}
}

// detachStream forgets a GET stream whose handler returned.
func (r *liveRegistry) detachStream(gs *getStream) {
	r.gets.remove(gs)
	r.mu.Lock()
	r.signalLocked()
	r.mu.Unlock()
}

// handOver hands the batch's notifications to c's session, but those of
// subscriptions that ended since the batch was taken, and returns how many
// it handed over.
func (r *liveRegistry) handOver(c *conn, batch []outNote) (sent uint64) {
	ch := channelFor(c)
	for i := range batch {
		if batch[i].e.gone.Load() {
			continue
		}
		ok, closed := r.send(ch, c, &batch[i])
		if closed {
			break
		}
		if ok {
			sent++
		}
	}
	return sent
}

// slotEndedUnlessGone is what a delivery waiting to hand over e waits on
// besides: a channel closed when a subscription of c ends; nil, true when
// e's has ended already. Both are read under c's mutex, under which a
// subscription ends, so that no end goes unseen between the two.
func (c *conn) slotEndedUnlessGone(e *outSlot) (<-chan struct{}, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gone.Load() {
		return nil, true
	}
	if c.slotEnded == nil {
		c.slotEnded = make(chan struct{})
	}
	return c.slotEnded, false
}

// writeToStream writes the batch's notifications into the newest GET
// stream of c's session, as many as fit in streamChunk at a time in one
// write (writeEvents), and returns how many it wrote. When a write fails,
// the stream is forgotten and the notifications not known to be written
// go back into the outbox, for the next stream.
func (r *liveRegistry) writeToStream(c *conn, batch []outNote) (sent uint64) {
	sc := streamScratches.Get().(*streamScratch)
	defer streamScratches.Put(sc)
	for len(batch) > 0 {
		gs := r.gets.newest(c.streamID)
		if gs == nil {
			r.putBack(c, batch)
			return sent
		}
		sc.buf, sc.ends = sc.buf[:0], sc.ends[:0]
		n := 0 // of batch, encoded or skipped
		for ; n < len(batch) && len(sc.buf) < streamChunk; n++ {
			e := &batch[n]
			if e.e.sb.gone.Load() {
				continue
			}
			start := len(sc.buf)
			var err error
			if e.uriOnly {
				sc.buf, err = appendURIUpdated(sc.buf, e.e.sb.uri)
			} else {
				sc.buf, err = appendNotification(sc.buf, e.note)
			}
			if err != nil {
				// Nothing a retry would change; no client could read it.
				r.a.logger.Error("adapter: encoding a notification failed", "uri", e.e.sb.uri, "error", err)
				sc.buf = sc.buf[:start]
				continue
			}
			sc.ends = append(sc.ends, len(sc.buf))
		}
		sc.msgs = sc.msgs[:0]
		start := 0
		for _, end := range sc.ends {
			sc.msgs = append(sc.msgs, sc.buf[start:end])
			start = end
		}
		if len(sc.msgs) > 0 {
			err := gs.writeEvents(sc.msgs, r.a.logger)
			clear(sc.msgs)
			if err != nil {
				r.gets.remove(gs)
				r.putBack(c, batch)
				return sent
			}
			sent += uint64(len(sc.ends))
		}
		batch = batch[n:]
	}
	return sent
}

// streamChunk bounds the bytes of notifications writeToStream writes at
// once.
const streamChunk = 32 << 10

// A streamScratch is what writeToStream encodes a chunk in, reused.
type streamScratch struct {
	buf  []byte
	ends []int
	msgs [][]byte
}

var streamScratches = sync.Pool{New: func() any { return new(streamScratch) }}

// putBack queues again the notifications of a batch that could not be
// written, unless their subscription ended or is queued already.
func (r *liveRegistry) putBack(c *conn, rest []outNote) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range rest {
		if sb := e.e.sb; !sb.gone.Load() && !c.pendingLocked(sb.slot) {
			c.pushLocked(sb.slot)
		}
	}
}

// send hands e's notification to c's session's channel, waiting while it
// is full, until e's listen stream (nil for resources/subscribe), its
// subscription or the session (c.done) ends. It reports whether the
// notification was handed over, and whether the channel was closed: the
// transport is gone.
func (r *liveRegistry) send(ch chan<- mcp.JSONRPCNotification, c *conn, e *outNote) (sent, closed bool) {
	if sent, closed = trySend(ch, e.note); sent || closed {
		return sent, closed // the common case, without waiting
	}
	r.waitingForRoom(1)
	defer r.waitingForRoom(-1)
	for {
		ended, gone := c.slotEndedUnlessGone(e.e)
		if gone {
			return false, false
		}
		if sent, closed, again := waitSend(ch, e.note, c.done, e.e.sb.st.done, ended); !again {
			return sent, closed
		}
	}
}

// waitingForRoom counts a delivery that starts (+1) or stops (-1) waiting
// for room in its session's channel, and wakes Close, whose first step
// ends once every delivery left is one of those (lifecycle.go).
func (r *liveRegistry) waitingForRoom(delta int64) {
	r.waiting.Add(delta)
	r.mu.Lock()
	r.signalLocked()
	r.mu.Unlock()
}

// waitSend hands n to ch, waiting for room until done or streamDone ends
// the wait; again, when a subscription of the conn ended first (ended),
// which may be n's.
func waitSend(ch chan<- mcp.JSONRPCNotification, n mcp.JSONRPCNotification, done, streamDone, ended <-chan struct{}) (sent, closed, again bool) {
	defer func() {
		if recover() != nil {
			sent, closed, again = false, true, false
		}
	}()
	select {
	case ch <- n:
		return true, false, false
	case <-done:
	case <-streamDone:
	case <-ended:
		return false, false, true
	}
	return false, false, false
}
