package adapter

import (
	"context"
	"slices"
	"time"
)

// What the live registry tells an Observer (observe.go) of re-runs and
// notifications, and the counts it keeps for LiveStats.
//
// A change reaches each query it affects through changeLocked. With an
// Observer, the query keeps what caused its next run (rerunCauses, bounded
// by MaxCauseKeys and MaxCauses), and the worker that runs it hands them to
// the Observer in the re-run's Op. Without one, nothing is kept and the
// only cost is a counter.

// rerunCauses is what caused the next run of a query: the changed keys,
// and the contexts of the writers that gave one (ChangedContext), oldest
// first. The common cause, one key, takes no allocation of its own.
type rerunCauses struct {
	keys []string
	ctxs []context.Context
	key  [1]string // keys' first array
}

// changeLocked schedules q for a change of key ("" for a change of
// everything), reported with ctx (nil for none). A change counts as
// coalesced when it costs q no run of its own: q was queued already, or
// running with one more run already owed. One Changed call that reaches q
// through several keys is one change.
func (r *liveRegistry) changeLocked(ctx context.Context, q *query, key string) {
	first := q.seenChange != r.changes
	q.seenChange = r.changes
	if first && !r.closed && (q.state == runQueued || q.state == runRunning && q.dirty) {
		r.coalesced++
	}
	if r.a.cfg.observer != nil {
		q.noteCauseLocked(ctx, key, first)
	}
	r.scheduleLocked(q)
}

// noteCauseLocked adds a change to the causes of q's next run.
func (q *query) noteCauseLocked(ctx context.Context, key string, first bool) {
	c := q.causes
	if c == nil {
		c = &rerunCauses{}
		c.keys = c.key[:0]
		q.causes = c
	}
	if key != "" && len(c.keys) < MaxCauseKeys && !slices.Contains(c.keys, key) {
		c.keys = append(c.keys, key)
	}
	if first && ctx != nil && len(c.ctxs) < MaxCauses {
		c.ctxs = append(c.ctxs, ctx)
	}
}

// rerunObservation is a re-run under an Observer's eyes; the zero value,
// none. It is a value, kept by the worker that runs the query: observing
// costs a re-run no allocation of the registry's.
type rerunObservation struct {
	obs Observer
	ctx context.Context // the re-run's, as the Observer made it
	o   Observation
	cmd string
	// ended is how the re-run went, taken under the registry's lock and
	// told without it (report).
	ended rerunEnd
}

// rerunEnd is how a re-run went.
type rerunEnd struct {
	outcome  Outcome
	err      error
	notified int
	at       time.Time // when it queued the notifications
}

// observeRerun tells the Observer, if any, that q's re-run begins, and
// returns the context it is to run in: q.ctx, or what the Observer made of
// it. It runs without the registry's lock.
func (r *liveRegistry) observeRerun(q *query, causes *rerunCauses) (context.Context, rerunObservation) {
	obs := r.a.cfg.observer
	if obs == nil {
		return q.ctx, rerunObservation{}
	}
	op := Op{Kind: OpRerun, Command: q.key.cmd.name, Start: time.Now()}
	if causes != nil {
		op.Keys, op.Causes = causes.keys, causes.ctxs
	}
	ctx, o := obs.Observe(q.ctx, op)
	return ctx, rerunObservation{obs: obs, ctx: ctx, o: o, cmd: op.Command}
}

// settledLocked notes how q's re-run went, once settleLocked has applied
// it and queued notified notifications, and returns ro, to be reported.
// Without an Observer it returns none.
func (ro rerunObservation) settledLocked(q *query, out outcome, late bool, notified int) rerunObservation {
	if ro.o == nil {
		return ro
	}
	e := rerunEnd{err: out.err, notified: notified, at: time.Unix(0, q.lastChange)}
	switch {
	case late:
		e.outcome = OutcomeLate
	case q.dropped:
		e.outcome = OutcomeDropped
	default:
		e.outcome = rerunOutcome(out.err, notified > 0)
	}
	ro.ended = e
	return ro
}

// report tells the Observer how the re-run went and, when it queued
// notifications, of that batch, as a child of the re-run. It runs without
// the registry's lock, and returns none (nothing left to report).
func (ro rerunObservation) report() rerunObservation {
	if ro.o == nil {
		return ro
	}
	if e := ro.ended; e.notified > 0 {
		_, n := ro.obs.Observe(ro.ctx, Op{Kind: OpNotify, Command: ro.cmd, Count: e.notified, Start: e.at})
		n.End(OutcomeOK, nil)
	}
	ro.o.End(ro.ended.outcome, ro.ended.err)
	return rerunObservation{}
}

// LiveChanged returns a channel that is closed at the live registry's next
// change: a subscription made or ended, a change reported, the re-runs of
// a burst done, the notifications of a session delivered. A page or a
// monitor that shows LiveStats or LiveQueries waits on it instead of
// polling. Take the channel before reading the state, so that no change
// falls between the two:
//
//	for {
//		changed := a.LiveChanged()
//		show(a.LiveQueries())
//		select {
//		case <-changed:
//		case <-ctx.Done():
//			return
//		}
//	}
func (a *Adapter) LiveChanged() <-chan struct{} {
	r := a.live
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return r.wake
}
