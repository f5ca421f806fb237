package adapter

import "context"

// signalLocked wakes whoever waits for the registry to change.
func (r *liveRegistry) signalLocked() {
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}

// waitFor blocks until done holds, or ctx ends. done is called with r.mu
// held, after every change of the registry's state.
func (r *liveRegistry) waitFor(ctx context.Context, done func() bool) error {
	for {
		r.mu.Lock()
		if done() {
			r.mu.Unlock()
			return nil
		}
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		wake := r.wake
		r.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitIdle blocks until the adapter has no live work left: no re-run
// running or queued and no notification waiting in any connection's
// outbox. It returns ctx's error if ctx ends first.
//
// It is meant for tests, and for an orderly shutdown: after a write and its
// Changed call, WaitIdle returns once every affected query has re-run and
// every resulting notification has been handed to its session (through
// HTTPHandler, to a legacy session's GET stream). A client that stops
// reading its notifications, or a legacy HTTP client that has no GET
// stream open, can keep the adapter busy until its session ends, so give
// ctx a deadline.
func (a *Adapter) WaitIdle(ctx context.Context) error {
	if ctx == nil {
		panic("adapter: WaitIdle: nil context")
	}
	return a.live.waitFor(ctx, a.live.idleLocked)
}

// LiveStats describes the live registry at one moment (Adapter.LiveStats).
type LiveStats struct {
	// Subscriptions counts subscriptions held: one per URI spelling on
	// each listen stream and on each session's resources/subscribe, so a
	// session that lists a URI on two listen streams holds two, each
	// notified under its own subscription id.
	Subscriptions int
	// Queries counts distinct queries (command and canonical arguments)
	// behind them; identical subscriptions share one.
	Queries int
	// Sessions counts the sessions (on stateless HTTP, the listen streams)
	// that hold subscriptions or have notifications on their way.
	Sessions int
	// Pending counts notifications queued and not yet handed to a session.
	// It never exceeds Subscriptions: a notification already pending for a
	// URI is not queued twice.
	Pending int
	// Delivering counts the sessions whose delivery goroutine is running,
	// each holding the notifications it took from its outbox at once on
	// their way to mcp-go: at most one per subscription of the session.
	Delivering int
	// Running counts queries whose re-run is running or queued.
	Running int
	// Reruns counts the re-runs completed since Wrap.
	Reruns uint64
	// Notified counts the notifications/resources/updated handed to
	// sessions since Wrap.
	Notified uint64
	// Late counts the re-runs that outlived their deadline
	// (WithRerunTimeout) since Wrap: they notified no one, and their
	// queries run again on the next change.
	Late uint64
	// Coalesced counts the changes since Wrap that cost a query no run of
	// its own, counted once per query a change reached: the query was
	// queued already, or running with one more run already owed. Many
	// writes in a burst cost a query at most one more run.
	Coalesced uint64
	// Refused counts the subscriptions refused since Wrap: URIs of the
	// adapter's scheme that name no live command or one not granted, that
	// do not convert, that are over a cap or rate limited, or that came
	// after Close began.
	Refused uint64
}

// LiveStats reports the state of the live registry: how many subscriptions,
// queries and sessions it holds, and how much work is pending. It is cheap,
// visiting each session that holds subscriptions once: tests and monitoring
// use it to check bounds.
func (a *Adapter) LiveStats() LiveStats {
	a.live.mu.Lock()
	defer a.live.mu.Unlock()
	return a.live.statsLocked()
}

func (r *liveRegistry) statsLocked() LiveStats {
	pending, notified := 0, r.notifiedGone
	for _, c := range r.conns {
		c.mu.Lock()
		pending += len(c.queue)
		notified += c.notified
		c.mu.Unlock()
	}
	return LiveStats{
		Subscriptions: r.subs,
		Queries:       len(r.queries),
		Sessions:      len(r.conns),
		Pending:       pending,
		Delivering:    int(r.deliverers.Load()),
		Running:       r.runq.n + r.inflight,
		Reruns:        r.reruns,
		Notified:      notified,
		Late:          r.late,
		Coalesced:     r.coalesced,
		Refused:       r.refused.Load(),
	}
}

// idleLocked reports whether no goroutine of the registry is at work and
// no notification waits. An outbox that is not empty has its delivery
// goroutine (enqueueLocked starts it, and it leaves only with the outbox
// empty, both under the conn's mutex), except the outbox of a session served on GET
// streams while it has none open (liveoutbox.go): those are looked at one
// by one, and there are as many as legacy HTTP sessions subscribe.
func (r *liveRegistry) idleLocked() bool {
	if r.workers != 0 || r.deliverers.Load() != 0 || r.runq.n != 0 || len(r.held.conns) != 0 || r.pub != nil && r.pub.busy() {
		return false
	}
	for _, c := range r.streamConns {
		c.mu.Lock()
		waiting := len(c.queue) > 0
		c.mu.Unlock()
		if waiting {
			return false
		}
	}
	return true
}
