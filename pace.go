package adapter

import (
	"context"
	"time"
)

// Pacing: at most one notification per interval (WithNotifyInterval).
//
// A query of a paced command remembers when it last queued its
// subscribers' notifications (queryPace.notedAt). When a re-run finds a new
// result sooner than the interval after that, the notifications are not
// queued: the query is delayed, filed in the pacer's heap under when they
// are due (notedAt + the interval), and more new results meanwhile find it
// delayed already and add nothing. When the first is due, the pacer's one
// timer queues the notifications of every query due, exactly as a re-run
// would have (enqueueLocked), and sets itself for the next, or stops.
//
// Subscriptions that share a query are paced together: a subscription is
// notified only through its query, so each hears at most one notification
// per interval, counted from when they were queued. A query dropped while
// delayed leaves the heap. Close queues every delayed notification at once
// (releaseDelayed), and from then on nothing is delayed.
//
// The cost while nothing is delayed is nothing: the timer is stopped once
// the heap is empty, and a command without the option is never looked at
// beyond one comparison in applyLocked.

// pacer is the registry's part in pacing. The registry's mutex guards it.
type pacer struct {
	// epoch is when the registry's pacing clock started: times are
	// durations since it, which time.Since reads from the monotonic clock.
	epoch time.Time
	// due is a min-heap of the delayed queries, by queryPace.due; each
	// knows its place (queryPace.at).
	due []*query
	// timer runs paceFired; made on the first delay. armed: it is set to
	// fire at armedFor, for the heap's first.
	timer    *time.Timer
	armed    bool
	armedFor time.Duration
	// fires counts the timer's callbacks scheduled or running, so that
	// Close waits for those it could not stop: a Reset or an AfterFunc
	// that schedules one adds one, a Stop that cancels one takes it back,
	// and each callback takes its own when it has done.
	fires int
}

// queryPace is a paced query's state; nil until its first result changes.
type queryPace struct {
	noted   bool          // it has queued notifications since it was made
	notedAt time.Duration // when it last did, on the pacer's clock
	due     time.Duration // delayed: when its notifications go out
	at      int           // its place in pacer.due, plus one; 0 when not delayed
}

// now is the pacer's clock.
func (p *pacer) now() time.Duration { return time.Since(p.epoch) }

// delayed reports whether q's notifications wait for their interval.
func (q *query) delayed() bool { return q.pace != nil && q.pace.at != 0 }

// delayLocked decides, for q, a query of a paced command whose result has
// just changed, whether its notifications wait: true when they do, because
// they were queued less than the interval ago (q is delayed now), or wait
// already. False when they go out now, which it notes as the query's last.
// After Close began nothing waits.
func (r *liveRegistry) delayLocked(q *query) bool {
	p := q.pace
	if p == nil {
		p = new(queryPace)
		q.pace = p
	}
	if p.at != 0 {
		return true // the notification already due will tell of this too
	}
	now := r.pacer.now()
	every := q.key.cmd.notifyEvery
	if r.closed || !p.noted || now-p.notedAt >= every {
		p.noted, p.notedAt = true, now
		return false
	}
	p.due = p.notedAt + every
	r.pacer.push(q)
	r.armPaceLocked()
	return true
}

// undelayLocked takes q, dropped, out of the heap if it is delayed.
func (r *liveRegistry) undelayLocked(q *query) {
	if !q.delayed() {
		return
	}
	r.pacer.remove(q.pace.at - 1)
	r.armPaceLocked()
}

// armPaceLocked sets the timer for the heap's first query, or stops it
// when the heap is empty.
func (r *liveRegistry) armPaceLocked() {
	p := &r.pacer
	if len(p.due) == 0 {
		if p.timer != nil && p.timer.Stop() {
			p.fires--
		}
		p.armed = false
		return
	}
	next := p.due[0].pace.due
	if p.armed && p.armedFor == next {
		return
	}
	wait := next - p.now()
	switch {
	case p.timer == nil:
		p.timer = time.AfterFunc(wait, r.paceFired)
		p.fires++
	case !p.timer.Reset(wait):
		p.fires++ // it had fired or was stopped: this schedules one more
	}
	p.armed, p.armedFor = true, next
}

// paceFired is the timer's callback: it queues the notifications of every
// query due, and sets the timer for the next.
func (r *liveRegistry) paceFired() {
	r.mu.Lock()
	p := &r.pacer
	p.fires--
	p.armed = false
	told := r.releaseDueLocked(p.now())
	r.armPaceLocked()
	ready := r.takeReadyLocked(nil)
	r.signalLocked()
	r.mu.Unlock()
	r.deliverReady(ready)
	r.reportDelayed(told)
}

// releaseDelayed queues every delayed notification at once, and stops the
// timer (Close, once nothing can be delayed any more).
func (r *liveRegistry) releaseDelayed() {
	r.mu.Lock()
	told := r.releaseDueLocked(-1)
	r.armPaceLocked()
	ready := r.takeReadyLocked(nil)
	r.signalLocked()
	r.mu.Unlock()
	r.deliverReady(ready)
	r.reportDelayed(told)
}

// releaseDueLocked queues the notifications of the delayed queries due by
// now (every one, for now < 0) and returns, with an Observer, what it
// queued, for reportDelayed.
func (r *liveRegistry) releaseDueLocked(now time.Duration) []delayedNote {
	p := &r.pacer
	var told []delayedNote
	at := p.now()
	for len(p.due) > 0 && (now < 0 || p.due[0].pace.due <= now) {
		q := p.due[0]
		p.remove(0)
		q.pace.noted, q.pace.notedAt = true, at
		r.notifyAllLocked(q)
		if r.a.cfg.observer != nil && len(q.subs) > 0 {
			told = append(told, delayedNote{cmd: q.key.cmd.name, n: len(q.subs)})
		}
	}
	return told
}

// delayedNote is a delayed batch of notifications an Observer is told of.
type delayedNote struct {
	cmd string
	n   int
}

// reportDelayed tells the Observer of the delayed notifications that went
// out: an OpNotify each, with a context of its own, since no re-run
// queued them. It runs without the registry's lock.
func (r *liveRegistry) reportDelayed(told []delayedNote) {
	obs := r.a.cfg.observer
	if obs == nil {
		return
	}
	now := time.Now()
	for _, d := range told {
		_, o := obs.Observe(context.Background(), Op{Kind: OpNotify, Command: d.cmd, Count: d.n, Start: now})
		o.End(OutcomeOK, nil)
	}
}

// delayedSubsLocked counts the subscriptions whose notification waits for
// its interval.
func (r *liveRegistry) delayedSubsLocked() int {
	n := 0
	for _, q := range r.pacer.due {
		n += len(q.subs)
	}
	return n
}

// The heap of delayed queries, by queryPace.due. Written out rather than
// through container/heap, so that no query is boxed into an interface.

// push files q, not in the heap, under q.pace.due.
func (p *pacer) push(q *query) {
	p.due = append(p.due, q)
	q.pace.at = len(p.due)
	p.up(len(p.due) - 1)
}

// remove takes the query at place i out of the heap.
func (p *pacer) remove(i int) {
	last := len(p.due) - 1
	q := p.due[i]
	if i != last {
		p.swap(i, last)
	}
	p.due[last] = nil
	p.due = p.due[:last]
	q.pace.at = 0
	if i != last {
		if !p.down(i) {
			p.up(i)
		}
	}
}

func (p *pacer) less(i, j int) bool { return p.due[i].pace.due < p.due[j].pace.due }

func (p *pacer) swap(i, j int) {
	p.due[i], p.due[j] = p.due[j], p.due[i]
	p.due[i].pace.at = i + 1
	p.due[j].pace.at = j + 1
}

func (p *pacer) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !p.less(i, parent) {
			return
		}
		p.swap(i, parent)
		i = parent
	}
}

// down moves the query at i down to its place and reports whether it
// moved.
func (p *pacer) down(i int) bool {
	start := i
	n := len(p.due)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && p.less(r, l) {
			j = r
		}
		if !p.less(j, i) {
			break
		}
		p.swap(i, j)
		i = j
	}
	return i > start
}
