package adapter

import (
	"context"
	"reflect"
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
	// all: a change of everything reached the query too. Its keys then
	// say less than the truth, and Op.Keys is nil, as documented.
	all bool
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
	if key == "" {
		c.all = true
	} else if len(c.keys) < MaxCauseKeys && !slices.Contains(c.keys, key) {
		c.keys = append(c.keys, key)
	}
	if first && ctx != nil && len(c.ctxs) < MaxCauses {
		c.ctxs = append(c.ctxs, ctx)
	}
}

// rerunObservation is a re-run under an Observer's eyes: one query's, or
// one batch's (livebatch.go); the zero value, none. It is a value, kept by
// the worker that runs the job: observing costs a re-run no allocation of
// the registry's.
type rerunObservation struct {
	obs Observer
	ctx context.Context // the re-run's, as the Observer made it
	o   Observation
	cmd string
	// start is the Op's Start: the run's phase (ran) begins there.
	start time.Time
	// How the re-run went, noted under the registry's lock (settleLocked)
	// and told without it (report).
	err      error
	notified int
	at       int64 // when it queued the notifications, in Unix nanoseconds
	late     bool
	applied  bool // at least one query was still there to apply it to
}

// observeRerun tells the Observer, if any, that a re-run of cmd begins,
// for the causes of count queries (count > 1 for a batch), and returns the
// context it is to run in: parent (the run context), or what the Observer
// made of it. It runs without the registry's lock.
func (r *liveRegistry) observeRerun(parent context.Context, cmd string, causes *rerunCauses, count int) (context.Context, rerunObservation) {
	obs := r.a.cfg.observer
	if obs == nil {
		return parent, rerunObservation{}
	}
	op := Op{Kind: OpRerun, Command: cmd, Start: time.Now()}
	if count > 1 {
		op.Count = count
	}
	if causes != nil {
		op.Causes = causes.ctxs
		if !causes.all {
			op.Keys = causes.keys
		}
	}
	ctx, o := obs.Observe(parent, op)
	return ctx, rerunObservation{obs: obs, ctx: ctx, o: o, cmd: cmd, start: op.Start}
}

// ran tells the Observer that the run (the query's, or the batch's call)
// returned at end, as the phase PhaseCommand. End comes later, once the
// run is applied: a worker applies a chunk of up to maxChunk runs
// together and reports them after, so End's own time says how long the
// worker took, not how long the query did.
func (ro *rerunObservation) ran(end time.Time) {
	if ro.o == nil {
		return
	}
	ro.o.Phase(PhaseCommand, ro.start, end)
}

// mergeCauses adds the causes of another query of a batch to c, within the
// bounds, each once, and returns it.
func mergeCauses(c, more *rerunCauses) *rerunCauses {
	if more == nil {
		return c
	}
	if c == nil {
		c = &rerunCauses{}
		c.keys = c.key[:0]
	}
	c.all = c.all || more.all
	for _, k := range more.keys {
		if len(c.keys) < MaxCauseKeys && !slices.Contains(c.keys, k) {
			c.keys = append(c.keys, k)
		}
	}
	for _, ctx := range more.ctxs {
		// A write that reached several queries of the batch is one cause
		// of it, not one per query.
		if len(c.ctxs) < MaxCauses && !slices.ContainsFunc(c.ctxs, func(had context.Context) bool { return sameContext(had, ctx) }) {
			c.ctxs = append(c.ctxs, ctx)
		}
	}
	return c
}

// sameContext reports whether a and b are one context. == panics on two
// values of one type that cannot be compared, which a context of the
// user's may be: those count as distinct.
func sameContext(a, b context.Context) bool {
	v := reflect.ValueOf(a)
	return v.Type() == reflect.TypeOf(b) && v.Comparable() && a == b
}

// settleLocked notes how the re-run went for q, once it was applied (or
// not: late, or q dropped) and queued notified notifications. A batch's
// observation is settled once per query.
func (ro *rerunObservation) settleLocked(q *query, out outcome, late bool, notified int) {
	if ro.o == nil {
		return
	}
	// A batch's first error, unless a later one is the server's: that one
	// makes the batch internal, and a set that merely vanished before it
	// must not hide it.
	if ro.err == nil || rerunOutcome(ro.err, false) != OutcomeInternal && rerunOutcome(out.err, false) == OutcomeInternal {
		ro.err = out.err
	}
	ro.late = ro.late || late
	ro.applied = ro.applied || !q.dropped
	if notified > 0 {
		ro.notified += notified
		ro.at = q.lastChange
	}
}

// report tells the Observer how the re-run went and, when it queued
// notifications, of that batch of notifications, as a child of the
// re-run. It runs without the registry's lock, and leaves ro none.
func (ro *rerunObservation) report() {
	if ro.o == nil {
		return
	}
	if ro.notified > 0 {
		_, n := ro.obs.Observe(ro.ctx, Op{Kind: OpNotify, Command: ro.cmd, Count: ro.notified, Start: time.Unix(0, ro.at)})
		n.End(OutcomeOK, nil)
	}
	outcome := rerunOutcome(ro.err, ro.notified > 0)
	switch {
	case ro.late:
		outcome = OutcomeLate
	case !ro.applied:
		outcome = OutcomeDropped
	}
	ro.o.End(outcome, ro.err)
	*ro = rerunObservation{}
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
