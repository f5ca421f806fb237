package adapter

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplive/adapter/internal/digest"
	"github.com/mcplive/adapter/middleware"
)

// The re-run workers. A worker takes from the run queue either one query
// or, for a command with a batch form, several (batch.go), runs them
// with the registry's mutex released, and applies what the run learned.

// maxBatch bounds the argument sets of one batched re-run.
const maxBatch = MaxBatch

// maxChunk bounds the queries of a command without a batch form that a
// worker takes at once, each run alone, when many are waiting: fewer
// trips through the registry's mutex, and their notifications queued
// together.
const maxChunk = 16

// runner is the registry's state of re-runs: the run queue and the
// workers that drain it. The registry's mutex guards it; maxRuns, liveCtx,
// freshCalls and digests are set when the registry is made and only read.
type runner struct {
	// maxRuns bounds the re-runs running at once.
	maxRuns int
	// liveCtx holds the values of every re-run's context: origin Live.
	liveCtx context.Context
	// freshCalls: each re-run gets a middleware.Call of its own, as
	// middleware of the user's may keep it (job.call).
	freshCalls bool
	digests    *digest.Hasher
	// tagSeed seeds the opaque tags that stand for scopes (scopeTag).
	tagSeed maphash.Seed

	runq     runQueue // queries waiting for a worker
	workers  int      // worker goroutines alive
	idleJobs []*job   // the jobs of workers gone, for those to come
	inflight int      // queries whose re-run is running
	reruns   uint64
	// late counts re-runs that outlived their deadline (WithRerunTimeout).
	late uint64
}

// job is what a worker took from the run queue, and what running it gave:
// one query, a chunk of queries run one by one, or a batch run in one
// call. A worker keeps one and reuses its slices.
type job struct {
	qs      []*query
	batched bool
	// rcs are the queries' run contexts: one per query, or the batch's.
	rcs []*runContext
	// recs record what the runs read: one per query, or the batch's in
	// recs[0]. They are the worker's, reused from job to job.
	recs [maxChunk]readRecorder
	// prev are the queries' read sets when the job began: a subscription
	// that shares a query may replace q.reads while it runs.
	prev [][]string
	outs []runResult
	// encode says what run i encodes of its result, and was is the
	// digest of the query's result when the job began (encodeModeLocked).
	encode []encodeMode
	was    []digest.Digest
	// late: query i outlived its deadline; a batch's all do.
	late   []bool
	before uint64 // the change count when the job began
	// hearing: the change feed heard every change when the job began, so
	// that its results may be current (kept.go).
	hearing bool
	// fallback: a batch that failed as a whole, whose queries run again
	// one by one.
	fallback bool
	// ran is how many of a chunk's queries ran: those after did not
	// start, because Close began.
	ran int
	// With an Observer only (observe.go): what caused each query's
	// run, and the observations of the runs (one per query, or the
	// batch's), reported once the registry's lock is released.
	causes []*rerunCauses
	obs    []rerunObservation
	// calls are the runs' middleware.Calls, reused from job to job when
	// no middleware of the user's could keep one (call).
	calls [maxChunk]middleware.Call
	// slot is a *R where the runs of a command whose results are of type
	// R put them, when nothing of the user's sees them (resultSlot), and
	// slotWalk the walk of R it is for: kept from run to run, zero
	// between them.
	slot     any
	slotWalk *digest.Walk
	// ready is where the worker takes the connections it delivers to
	// (takeReadyLocked), empty between deliveries.
	ready []*conn
}

// resultSlot is the job's slot for a result of rw's type: the one it
// has, or one from rw's scratch in place of a slot of another type.
func (j *job) resultSlot(rw *digest.Walk) any {
	if j.slotWalk != rw {
		if j.slotWalk != nil {
			j.slotWalk.PutSlot(j.slot)
		}
		j.slot, j.slotWalk = rw.Slot(), rw
	}
	return j.slot
}

// call is where the job's run i (a batch's: 0) keeps its middleware.Call.
// With middleware of the user's (WithMiddleware), which may keep a Call
// past its run, each run has its own; without, only the adapter's code sees
// it (Recover, and RateLimit, which lets origin Live through untouched), so
// the job's own serves run after run: 96 bytes a re-run the garbage
// collector never sees.
func (j *job) call(i int, fresh bool) *middleware.Call {
	if fresh {
		return new(middleware.Call)
	}
	return &j.calls[i]
}

// work re-runs queued queries until the queue is empty.
func (r *liveRegistry) work() {
	r.mu.Lock()
	j := r.jobLocked()
	for {
		if ready := r.takeReadyLocked(j.ready[:0]); len(ready) > 0 {
			// Bursts this job filled, or the round's last if it ended
			// with this job: hand them over.
			r.mu.Unlock()
			r.deliverReady(ready)
			clear(ready)
			j.ready = ready[:0]
			r.mu.Lock()
		}
		if !r.nextLocked(j) {
			if len(j.obs) == 0 {
				break
			}
			// Observer: report the last job before this worker counts
			// as gone, so that WaitIdle implies it was told.
			r.mu.Unlock()
			j.report()
			r.mu.Lock()
			continue
		}
		r.mu.Unlock()
		j.report() // observer: the previous job's
		if j.batched {
			r.rerunBatch(j)
		} else {
			start := time.Now()
			j.ran = len(j.qs)
			for i := range j.qs {
				if i > 0 && r.closing.Load() {
					j.ran = i // Close began: the rest do not start
					break
				}
				start = r.rerunOne(j, i, start)
			}
		}
		r.mu.Lock()
		r.finishLocked(j)
	}
	r.workers--
	r.idleJobs = append(r.idleJobs, j) // emptied by finishLocked and report
	if !r.rerunningLocked() {
		r.flushHeldLocked()
	}
	ready := r.takeReadyLocked(nil) // j is idle: another worker may take it
	r.signalLocked()
	r.mu.Unlock()
	r.deliverReady(ready)
}

// jobLocked is a job for a worker that starts: one a worker gone left
// (idleJobs, at most maxRuns of them), or a new one. A job is 3 KB, with
// the slices it grew besides, and workers come and go with every round of
// re-runs.
func (r *liveRegistry) jobLocked() *job {
	if n := len(r.idleJobs); n > 0 {
		j := r.idleJobs[n-1]
		r.idleJobs[n-1] = nil
		r.idleJobs = r.idleJobs[:n-1]
		return j
	}
	return new(job)
}

// report tells the Observer how the job's runs went (observe.go).
func (j *job) report() {
	for i := range j.obs {
		j.obs[i].report()
	}
	j.obs = j.obs[:0]
}

// nextLocked takes the next job from the run queue and marks its queries
// running; false when the queue is empty, or Close has begun (which lets
// the runs under way finish and starts no other).
//
// The run contexts of a chunk are made in one array, new for every job:
// one allocation where there were up to maxChunk. Each run still has a
// context of its own, which a command may keep after its run (a context
// is never reused); a kept one keeps its chunk's array, 96 bytes a run,
// alive with it. On the fan-out benchmark, allocating them one by one cost
// about 4% of the CPU: the collector marks most of the time there, and
// each allocation pays for it.
func (r *liveRegistry) nextLocked(j *job) bool {
	if r.closed {
		r.runq.drain()
		return false
	}
	chunk := max(1, min(maxChunk, r.runq.n/r.maxRuns))
	j.qs, j.batched = r.runq.take(j.qs[:0], chunk, maxBatch)
	if len(j.qs) == 0 {
		return false
	}
	var batch *runContext
	var alone []runContext
	if j.batched {
		// The queries of a batch share a scope (runQueue.take).
		batch = newRunContext(r.valuesOf(j.qs[0]), len(j.qs), &j.recs[0])
	} else {
		alone = make([]runContext, len(j.qs))
	}
	for i, q := range j.qs {
		rc := batch
		if rc == nil {
			rc = &alone[i]
			rc.init(r.valuesOf(q), 1, &j.recs[i])
		}
		q.state = runRunning
		q.run = rc
		if r.a.cfg.observer != nil {
			j.causes = append(j.causes, q.causes)
			q.causes = nil
		}
		j.rcs = append(j.rcs, rc)
		j.prev = append(j.prev, q.reads)
		j.outs = append(j.outs, runResult{})
		j.encode = append(j.encode, r.encodeModeLocked(q))
		j.was = append(j.was, q.digest)
		j.late = append(j.late, false)
	}
	j.fallback = false
	j.before = r.changes
	j.hearing = r.kept.hearingNow()
	r.inflight += len(j.qs)
	return true
}

// rerunOne runs query i of the job alone, as origin Live, within the
// re-run deadline (WithRerunTimeout). A run that outlives it counts as a
// failure, logged and not applied, whatever it returned. It begins at
// start and returns when it ended.
func (r *liveRegistry) rerunOne(j *job, i int, start time.Time) time.Time {
	q, rc := j.qs[i], j.rcs[i]
	c := q.key.cmd
	rc.begin(start, r.a.cfg.rerunTimeout)
	call := j.call(i, r.freshCalls)
	*call = middleware.Call{Command: c.name, Args: q.args, RawArgs: q.raw, Origin: middleware.Live}
	var ctx context.Context = rc // it carries origin Live
	if r.a.cfg.observer != nil {
		var ro rerunObservation
		ctx, ro = r.observeRerun(rc, c.name, j.causes[i], 1)
		j.obs = append(j.obs, ro)
	}
	var slot any
	if !r.freshCalls && c.resultWalk != nil {
		// Nothing of the user's sees the result before the digest:
		// it may go to the job's slot rather than into a box.
		slot = j.resultSlot(c.resultWalk)
		rc.result = slot
	}
	var res any
	var err error
	refused := !r.grantedRerun(q, rc)
	if refused {
		err = errRerunNotGranted
	} else {
		res, err = c.handler(ctx, call)
	}
	rc.rec.close()
	now, ended := rc.end()
	if slot != nil {
		defer c.resultWalk.Clear(slot) // keep nothing of the result alive
	}
	if r.a.cfg.observer != nil {
		j.obs[len(j.obs)-1].ran(now)
	}
	if j.late[i] = ended == context.DeadlineExceeded; j.late[i] {
		r.logLate(j, i)
		return now
	}
	inSlot := slot != nil && res == slot
	reads := j.prev[i] // a refused re-run read nothing: it keeps what it read last
	if !refused {
		reads = rc.rec.readSet(-1, c.reads, j.prev[i])
	}
	j.outs[i] = r.resultOf(c, res, inSlot, err, reads)
	j.encodeResult(i, c, res, inSlot)
	if j.outs[i].err != nil {
		r.logRerunError(q, j.outs[i].err)
	}
	return now
}

// encodeResult encodes the result of run i, res, when the job's encode
// mode asks for it (kept.go).
func (j *job) encodeResult(i int, c *command, res any, inSlot bool) {
	switch j.encode[i] {
	case encodeAlways:
	case encodeChanged:
		if j.outs[i].digest == j.was[i] {
			return
		}
	default:
		return
	}
	c.encodeResult(&j.outs[i], res, inSlot)
}

// valuesOf is what the re-runs of q carry: origin Live, and with a scope
// the values of the request that made q.
func (r *liveRegistry) valuesOf(q *query) context.Context {
	if q.values != nil {
		return q.values
	}
	return r.liveCtx
}

// grantedRerun asks the grant (WithGrant) again before a re-run of q, a
// query of one scope (WithScope), with rc, which carries the values of the
// request that made q. A query without a scope serves whoever subscribed:
// it was granted to each when they subscribed.
func (r *liveRegistry) grantedRerun(q *query, rc *runContext) bool {
	return q.values == nil || r.a.granted(rc, q.key.cmd.name)
}

// errRerunNotGranted is what a re-run refused by the grant learns instead of
// a result: its subscribers hear once that it changed, and a read of theirs
// answers as the grant says.
var errRerunNotGranted = &rpcError{Code: mcp.INVALID_REQUEST, Message: "the grant was withdrawn: the re-run did not run the command", refused: true}

// finishLocked applies what the job learned to its queries, queues again
// those that changed while it ran, and, when the round is over, delivers
// what waited for it.
func (r *liveRegistry) finishLocked(j *job) {
	if j.batched {
		j.ran = len(j.qs)
	}
	if !j.fallback {
		r.reruns += uint64(j.ran)
	}
	var now int64 // when a result changed, read once for the job
	for i, q := range j.qs {
		q.state = runIdle
		q.run = nil
		if i >= j.ran {
			continue // never started (Close): nothing to apply or tell
		}
		if !j.fallback {
			q.reruns++
		}
		notified, changed := 0, false
		if q.dropped {
			j.recordLocked(i, q, changed, notified)
			continue
		}
		switch {
		case j.fallback:
			// What it saw says nothing; its own run, after every change
			// so far, will.
			q.solo, q.dirty = true, true
			if r.a.cfg.observer != nil {
				// That run is what notifies: it carries what caused the
				// batch, oldest first, so that the write's trace reaches
				// the notification.
				q.causes = mergeCauses(j.causes[i], q.causes)
			}
		case j.late[i]:
			// Its result says nothing: keep the query as it was, and
			// run it again on the next change, which may have come
			// while it ran, to keys it was not filed under yet.
			r.late++
			if r.changes != j.before {
				q.dirty = true
			}
		default:
			changed, notified = r.applyRunLocked(j, i, q, &now)
		}
		j.recordLocked(i, q, changed, notified)
		if q.dirty && !r.closed {
			q.dirty = false
			r.queueLocked(q)
		}
		r.wakeReadersLocked(q)
	}
	// The job's queries count as running until their notifications are
	// queued, so that those of the round's last job wait for its flush too.
	r.inflight -= len(j.qs)
	if !r.rerunningLocked() {
		r.flushHeldLocked()
	}
	j.reset()
}

// applyRunLocked applies what run i of j learned to q, and reports whether
// its result changed and how many subscriptions it notified now; *now is
// when, read once for the job.
func (r *liveRegistry) applyRunLocked(j *job, i int, q *query, now *int64) (changed bool, notified int) {
	q.solo = false
	out := j.outs[i]
	// q is filed under the keys its previous run read (j.prev, or what a
	// shared subscription's first run refiled it under meanwhile) until
	// applyLocked refiles it. A change during this run to a key only this
	// run read found nothing to mark dirty: run once more to be sure it is
	// seen.
	moved := r.changes != j.before && (!slices.Equal(j.prev[i], out.reads) || !slices.Equal(q.reads, out.reads))
	if moved {
		q.dirty = true
	}
	// Its result is current when no change reached q since the run
	// began, and none may have that q could not hear (moved).
	current := !moved && q.seenChange <= j.before && j.hearing
	if changed = r.applyLocked(q, out, current); changed {
		if *now == 0 {
			*now = time.Now().UnixNano()
		}
		q.lastChange = *now
		if !q.delayed() {
			notified = len(q.subs)
		}
	}
	return changed, notified
}

// reset empties the job for its next chunk, keeping its arrays and
// nothing they held: no dropped query's arguments, results or contexts.
func (j *job) reset() {
	clear(j.calls[:min(len(j.qs), maxChunk)])
	clear(j.qs)
	clear(j.rcs)
	clear(j.prev)
	clear(j.outs)
	clear(j.causes)
	j.causes = j.causes[:0]
	j.rcs, j.prev, j.outs, j.late = j.rcs[:0], j.prev[:0], j.outs[:0], j.late[:0]
	j.encode, j.was = j.encode[:0], j.was[:0]
}

// recordLocked notes in the observation of query i's run (the batch's,
// for a batch) how it went, with an Observer: whether its result changed,
// and how many notifications it queued (none when they wait for their
// interval: pace.go tells of those when they go out).
func (j *job) recordLocked(i int, q *query, changed bool, notified int) {
	if len(j.obs) == 0 {
		return
	}
	k := i
	if j.batched {
		k = 0
	}
	out := j.outs[i]
	if j.fallback {
		out.err = ErrBatchFailed
	}
	j.obs[k].recordLocked(q, out, j.late[i], changed, notified)
}

// ErrBatchFailed is the error an Observer is told of a batched re-run
// (WithBatch) that failed as a whole, with OutcomeInternal: its argument
// sets then run again one by one, each observed as a re-run of its own,
// with the Keys and Causes that caused the batch.
// LiveStats counts those runs and not the failed call; an Observer tells
// the call by errors.Is.
var ErrBatchFailed = errors.New("the batched re-run failed as a whole; its argument sets re-run one by one")

// logLate logs the run of query i of a job (all of them, for a batch) that
// outlived its deadline.
func (r *liveRegistry) logLate(j *job, i int) {
	q := j.qs[i]
	timeout := r.a.cfg.rerunTimeout
	took := time.Since(j.rcs[i].deadline.Add(-timeout))
	if !j.batched {
		r.a.logger.Warn("adapter: live re-run outlived its deadline; it runs again on the next change",
			"command", q.key.cmd.name, "arguments", q.key.args, "deadline", timeout, "took", took)
		return
	}
	r.a.logger.Warn("adapter: batched live re-run outlived its deadline; its argument sets run again on the next change",
		"command", q.key.cmd.name, "argument_sets", len(j.qs), "deadline", timeout, "took", took)
}

// runQueue holds the queries waiting for a worker, grouped by command, so
// that a worker can take several queries of a command with a batch form
// (WithBatch) at once, all of one scope. Commands take turns, the one
// waiting longest first; the queries of a command run in the order they
// were queued. It is guarded by the registry's mutex.
type runQueue struct {
	// turns are the commands with queries waiting, each once, in turn.
	turns []*command
	// byCmd keeps each command's queue, emptied or not, so that its array
	// serves the next burst.
	byCmd map[*command]*cmdQueue
	n     int // queries waiting
}

type cmdQueue struct {
	qs     []*query // waiting from head on
	head   int
	inTurn bool // in turns
}

// push queues q, which is not queued.
func (rq *runQueue) push(q *query) {
	c := q.key.cmd
	cq := rq.byCmd[c]
	if cq == nil {
		if rq.byCmd == nil {
			rq.byCmd = make(map[*command]*cmdQueue)
		}
		cq = &cmdQueue{}
		rq.byCmd[c] = cq
	}
	cq.qs = append(cq.qs, q)
	rq.n++
	if !cq.inTurn {
		cq.inTurn = true
		rq.turns = append(rq.turns, c)
	}
}

// take takes the next queries to run and appends them to dst: from the
// command whose turn it is, its first waiting query and, when the command
// has a batch form and that query may run in a batch (not solo), the
// queries waiting behind it that may too, up to batch in all; without a
// batch form (or solo), up to chunk queries, each to run alone. Queries
// dropped while they waited are left idle and skipped. It returns dst
// unchanged when nothing is waiting; batched reports a batch.
func (rq *runQueue) take(dst []*query, chunk, batch int) (_ []*query, batched bool) {
	for len(rq.turns) > 0 && len(dst) == 0 {
		// The others move up a place, in the turns' own array: slicing
		// the first off and appending it back would walk the array to
		// its end and allocate a new one, every few takes.
		c := rq.turns[0]
		n := copy(rq.turns, rq.turns[1:])
		cq := rq.byCmd[c]
		for cq.head < len(cq.qs) {
			q := cq.qs[cq.head]
			if q.dropped {
				rq.pop(cq)
				q.state = runIdle
				continue
			}
			if len(dst) == 0 {
				batched = c.batch != nil && !q.solo
			}
			if batched && (q.solo || len(dst) == batch || len(dst) > 0 && q.key.scope != dst[0].key.scope) ||
				!batched && (len(dst) == chunk || c.batch != nil && !q.solo) {
				break
			}
			rq.pop(cq)
			dst = append(dst, q)
		}
		if cq.head < len(cq.qs) {
			rq.turns[n] = c // its next turn, last
		} else {
			rq.turns[n] = nil
			rq.turns = rq.turns[:n]
			cq.inTurn = false
		}
	}
	return dst, batched && len(dst) > 1
}

// pop removes the query at the head of cq.
func (rq *runQueue) pop(cq *cmdQueue) {
	cq.qs[cq.head] = nil
	cq.head++
	rq.n--
	if cq.head == len(cq.qs) {
		cq.qs, cq.head = cq.qs[:0], 0
	}
}

// drain empties the queue, leaving every query in it idle (Close).
func (rq *runQueue) drain() {
	for _, cq := range rq.byCmd {
		for _, q := range cq.qs[cq.head:] {
			q.state = runIdle
		}
		clear(cq.qs)
		cq.qs, cq.head, cq.inTurn = cq.qs[:0], 0, false
	}
	rq.turns, rq.n = nil, 0
}
