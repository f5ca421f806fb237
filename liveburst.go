package adapter

import "time"

// Bursts: notifications wait for the re-run wave they belong to.
//
// A change that re-runs many queries notifies their subscribers one re-run
// at a time. Handed over as they come, a session's notifications would
// trickle in, and each would start its connection's delivery goroutine
// again and wake its transport again: on the fan-out benchmark, fifteen
// hundred goroutines an op for 157 sessions. So while re-runs are running
// or queued (a wave), a connection whose outbox was empty holds its
// notifications, and its delivery starts when the wave ends, or when its
// outbox holds holdBurst of them, or holdMax after the first was held,
// whichever comes first: one burst per session and wave, most of the time,
// and never more than holdMax late for the wave.
//
// Outside a wave (the last re-run of one, or a subscription's first run
// that differs from a shared query's state) delivery starts at once.

const (
	// holdBurst is how many notifications a held outbox fills before it
	// is delivered anyway: the default subscription cap, so that a
	// session's whole burst waits for its wave, and within mcp-go's
	// channel of 100, so that the flush hands it over without waiting.
	holdBurst = DefaultSubscriptionCap
	// holdMax bounds how long a notification is held while the wave goes
	// on.
	holdMax = 5 * time.Millisecond
)

// heldConns are the connections whose notifications wait for the wave.
type heldConns struct {
	conns []*conn
	// ready are the held connections delivered to through their session's
	// channel whose outboxes are left to the goroutine that made them
	// ready, to hand over with the registry's mutex released
	// (deliverReady): those of the flush, and those whose burst filled
	// during the wave (enqueueQuietLocked). Each counts as a delivery
	// under way.
	ready []*conn
	// timer flushes them holdMax after the first was held; made once and
	// reset.
	timer *time.Timer
}

// waveLocked reports whether re-runs are running or waiting.
func (r *liveRegistry) waveLocked() bool {
	return r.inflight > 0 || r.runq.n > 0
}

// holdLocked makes c wait for the wave.
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
		c.held, c.quiet = false, false
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
