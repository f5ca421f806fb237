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
// first.
type rerunCauses struct {
	keys []string
	ctxs []context.Context
}

// changeLocked schedules q for a change of key ("" for a change of
// everything), reported with ctx (nil for none). A change counts as
// coalesced when it costs q no run of its own: q was queued already, or
// running with one more run already owed. One Changed call that reaches q
// through several keys is one change.
func (r *liveRegistry) changeLocked(q *query, ctx context.Context, key string) {
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
		q.causes = c
	}
	if key != "" && len(c.keys) < MaxCauseKeys && !slices.Contains(c.keys, key) {
		c.keys = append(c.keys, key)
	}
	if first && ctx != nil && len(c.ctxs) < MaxCauses {
		c.ctxs = append(c.ctxs, ctx)
	}
}

// rerunObservation is a re-run under an Observer's eyes.
type rerunObservation struct {
	obs Observer
	ctx context.Context // the re-run's, as the Observer made it
	o   Observation
	cmd string
}

// rerunEnd is how a re-run went, taken under the registry's lock.
type rerunEnd struct {
	outcome  Outcome
	err      error
	notified int
}

// observeRerun tells the Observer, if any, that q's re-run begins, and
// returns the context it is to run in: q.ctx, or what the Observer made of
// it. It runs without the registry's lock.
func (r *liveRegistry) observeRerun(q *query, causes *rerunCauses) (context.Context, *rerunObservation) {
	obs := r.a.cfg.observer
	if obs == nil {
		return q.ctx, nil
	}
	op := Op{Kind: OpRerun, Command: q.key.cmd.name, Start: time.Now()}
	if causes != nil {
		op.Keys, op.Causes = causes.keys, causes.ctxs
	}
	ctx, o := obs.Observe(q.ctx, op)
	return ctx, &rerunObservation{obs: obs, ctx: ctx, o: o, cmd: op.Command}
}

// result says how q's re-run went, once settleLocked has applied it and
// queued notified notifications.
func (ro *rerunObservation) result(q *query, out outcome, late bool, notified int) rerunEnd {
	end := rerunEnd{err: out.err, notified: notified}
	switch {
	case late:
		end.outcome = OutcomeLate
	case q.dropped:
		end.outcome = OutcomeDropped
	default:
		end.outcome = rerunOutcome(out.err, notified > 0)
	}
	return end
}

// end tells the Observer how the re-run went and, when it queued
// notifications, of that batch, as a child of the re-run. It runs without
// the registry's lock.
func (ro *rerunObservation) end(e rerunEnd) {
	if e.notified > 0 {
		_, n := ro.obs.Observe(ro.ctx, Op{Kind: OpNotify, Command: ro.cmd, Count: e.notified, Start: time.Now()})
		n.End(OutcomeOK, nil)
	}
	ro.o.End(e.outcome, e.err)
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
