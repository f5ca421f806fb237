package adapter

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The delivery goroutine of a connection empties its outbox
// (liveoutbox.go) into the session, a whole outbox at a time: it takes the
// outbox under one lock and hands the notifications over outside it. A
// subscription it took is pending no more, so that a change from then on
// queues a notification again. It gives up a notification when its listen
// stream ends (the request's context) or its session unregisters
// (conn.done), and exits as soon as the outbox is empty, without the
// registry's mutex, which the re-runs contend for, unless the connection
// is to be forgotten.

// startDelivery starts the delivery goroutine of c, marked delivering;
// c is quiet no more. r.mu is held.
func (r *liveRegistry) startDelivery(c *conn) {
	c.quiet = false
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
	c.mu.Lock()
	start := !c.delivering && len(c.queue) > 0
	c.delivering = c.delivering || start
	c.mu.Unlock()
	if start {
		r.startDelivery(c)
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
// stream of c's session, and returns how many it wrote. When a write
// fails, the stream is forgotten and the notifications not written go back
// into the outbox, for the next stream.
func (r *liveRegistry) writeToStream(c *conn, batch []outNote) (sent uint64) {
	for i := range batch {
		e := &batch[i]
		if e.e.sb.gone.Load() {
			continue
		}
		gs := r.gets.newest(c.streamID)
		if gs == nil {
			r.putBack(c, batch[i:])
			return sent
		}
		msg, err := marshalNotification(e.note)
		if err != nil {
			// Nothing a retry would change; no client could read it.
			r.a.logger.Error("adapter: encoding a notification failed", "uri", e.e.sb.uri, "error", err)
			continue
		}
		if gs.writeEvent(msg) != nil {
			r.gets.remove(gs)
			r.putBack(c, batch[i:])
			return sent
		}
		sent++
	}
	return sent
}

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
