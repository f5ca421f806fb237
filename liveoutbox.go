package adapter

import (
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Delivery of notifications/resources/updated, per connection.
//
// mcp-go hands notifications to a session through a channel buffered to
// 100, and drops a notification that does not fit. The adapter must not
// drop one: a subscriber would never learn that its data changed. So each
// connection has an outbox, a queue of its subscriptions with a
// notification pending, and while the outbox is not empty one goroutine of
// its own that moves them to the session's channel and waits when the
// channel is full.
//
// A subscription is queued at most once (sub.pending): more changes before
// delivery coalesce into the one notification, which is all a subscriber
// needs, since it carries nothing but the URI. A client that never reads
// therefore costs at most one queued entry per subscription (the cap bounds
// those), one notification in the hands of its delivery goroutine and
// mcp-go's 100, however many writes happen.
//
// The delivery goroutine gives up a notification when its listen stream
// ends (the request's context) or its session unregisters (conn.done), and
// exits as soon as the outbox is empty.

// enqueueLocked queues a notification for sb unless one is pending, and
// starts its connection's delivery goroutine when none runs and the
// connection has somewhere to deliver. r.mu is held; the outbox itself is
// guarded by its conn's own mutex, so that delivery never waits for the
// registry.
func (r *liveRegistry) enqueueLocked(sb *sub) {
	if sb.gone {
		return
	}
	c := sb.st.c
	c.mu.Lock()
	if sb.pending {
		c.mu.Unlock()
		return
	}
	c.pushLocked(sb)
	start := !c.delivering && r.canDeliver(c)
	c.delivering = c.delivering || start
	c.mu.Unlock()
	if start {
		r.deliverers++
		go r.deliver(c)
	}
}

// pushLocked appends sb to c's outbox. c.mu is held.
func (c *conn) pushLocked(sb *sub) {
	sb.pending = true
	if c.head > 0 && len(c.queue) == cap(c.queue) {
		// Slide the pending entries to the front rather than grow: the
		// array never outgrows twice the connection's subscriptions, even
		// when the outbox never empties.
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue, c.head = c.queue[:n], 0
	}
	c.queue = append(c.queue, sb)
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
	start := !c.delivering && c.head < len(c.queue)
	c.delivering = c.delivering || start
	c.mu.Unlock()
	if start {
		r.deliverers++
		go r.deliver(c)
	}
}

// detachStream forgets a GET stream whose handler returned.
func (r *liveRegistry) detachStream(gs *getStream) {
	r.gets.remove(gs)
	r.mu.Lock()
	r.signalLocked()
	r.mu.Unlock()
}

// dequeueLocked takes the pending notification of sb, if any, out of its
// outbox. r.mu is held.
func (r *liveRegistry) dequeueLocked(sb *sub) {
	c := sb.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sb.pending {
		return
	}
	if i := slices.Index(c.queue[c.head:], sb); i >= 0 {
		c.queue = slices.Delete(c.queue, c.head+i, c.head+i+1)
	}
	c.resetIfEmptyLocked()
	sb.pending = false
}

// resetIfEmptyLocked rewinds an emptied outbox, keeping its array for the
// next burst: its capacity is bounded by the connection's subscriptions.
func (c *conn) resetIfEmptyLocked() {
	if c.head == len(c.queue) {
		c.queue, c.head = c.queue[:0], 0
	}
}

// deliver is the delivery goroutine of c: it empties c's outbox into its
// session, oldest first, and exits when the outbox is empty, or when c is
// served on GET streams and none is open (the next to open restarts it).
func (r *liveRegistry) deliver(c *conn) {
	var sent uint64 // handed over since c.mu was last held
	for {
		c.mu.Lock()
		c.notified += sent
		sent = 0
		var sb *sub
		if c.head < len(c.queue) && r.canDeliver(c) {
			sb = c.queue[c.head]
			c.queue[c.head] = nil
			c.head++
			c.resetIfEmptyLocked()
			sb.pending = false
		}
		c.mu.Unlock()

		if sb == nil {
			// Leave under the registry's lock, unless a notification
			// arrived (its enqueue saw this goroutine running) or a stream
			// opened meanwhile (attachStream, too).
			r.mu.Lock()
			c.mu.Lock()
			if c.head < len(c.queue) && r.canDeliver(c) {
				c.mu.Unlock()
				r.mu.Unlock()
				continue
			}
			c.delivering = false
			c.mu.Unlock()
			r.deliverers--
			r.maybeDropConnLocked(c)
			r.signalLocked()
			r.mu.Unlock()
			return
		}
		if c.streamID != "" {
			if r.writeToStream(c, sb) {
				sent++
			}
			continue
		}
		if send(c, sb.notification(), sb.st.done) {
			sent++
		}
	}
}

// writeToStream writes sb's notification into the newest GET stream of its
// session. When that fails, the stream is forgotten and the notification
// goes back into the outbox, for the next stream.
func (r *liveRegistry) writeToStream(c *conn, sb *sub) bool {
	gs := r.gets.newest(c.streamID)
	if gs != nil {
		msg, err := marshalNotification(sb.notification())
		if err != nil {
			// Nothing a retry would change; no client could read it.
			r.a.logger.Error("adapter: encoding a notification failed", "uri", sb.uri, "error", err)
			return false
		}
		if gs.writeEvent(msg) == nil {
			return true
		}
		r.gets.remove(gs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sb.gone && !sb.pending {
		c.pushLocked(sb)
	}
	return false
}

// notification is the notifications/resources/updated of sb. Its maps are
// made at the first delivery and reused, the _meta by every subscription of
// sb's stream: only the delivery goroutine of sb's connection touches them,
// and transports only read them.
func (sb *sub) notification() mcp.JSONRPCNotification {
	if sb.fields == nil {
		sb.fields = map[string]any{"uri": sb.uri}
	}
	st := sb.st
	if id := st.id; id != nil && st.meta == nil {
		// On a listen stream the notification carries the stream's
		// subscription id: Streamable HTTP tags what it sends on the
		// stream itself, stdio and in-process sessions do not, and the
		// client needs it on every transport.
		st.meta = map[string]any{mcp.MetaKeySubscriptionID: id}
	}
	return mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: mcp.MethodNotificationResourceUpdated,
			Params: mcp.NotificationParams{Meta: st.meta, AdditionalFields: sb.fields},
		},
	}
}

// send hands n to c's session, waiting while its channel is full, until the
// stream (streamDone, nil for none) or the session ends. It reports whether
// n was handed over.
func send(c *conn, n mcp.JSONRPCNotification, streamDone <-chan struct{}) (sent bool) {
	defer func() {
		// A transport that closed its channel: the session is gone.
		if recover() != nil {
			sent = false
		}
	}()
	if up, ok := c.session.(server.SessionWithStreamableHTTPConfig); ok {
		// What mcp-go does before it sends a notification itself: a POST
		// under way answers as an event stream, so it can carry it.
		up.UpgradeToSSEWhenReceiveNotification()
	}
	ch := c.session.NotificationChannel()
	select {
	case ch <- n: // the common case, without waiting
		return true
	default:
	}
	select {
	case ch <- n:
		return true
	case <-c.done:
		return false
	case <-streamDone:
		return false
	}
}
