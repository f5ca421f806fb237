package adapter

import (
	"context"
	"sync"
	"time"
)

// runContext is the context of one re-run of a live query, or of one
// batched re-run of several (livebatch.go). It behaves as
// context.WithTimeout(values, d) would, cancelled besides when the
// registry drops the queries it runs for or Close gives up on it, and it
// carries the run's read recorder. values is the registry's: a context
// with origin Live and nothing else, made once.
//
// Why not context.WithTimeout: arming a timer for every re-run, and filing
// the context under its query's, was a tenth of a fan-out's CPU, and most
// commands never look at their context: an in-memory lookup returns long
// before any deadline. So the timer is armed only when someone asks for
// Done, by making the context it stands for then; until then Err reads the
// clock.
//
// Why not larger: one is made for every re-run, and its bytes pace the
// garbage collector. With the read recorder inside, it was 288 bytes, a
// sixth of what the fan-out benchmark allocates. So the recorder is the
// worker's, reused from run to run (rec, with gen telling this run's
// reports from those of a context a command kept), and so is the run's
// middleware.Call when nothing of the user's could keep it (job.call): 80
// bytes are left, and 16 for the result slot (resultSlot), which saves the
// result's own allocation. (The Call is not the query's, made once: that
// would keep 96 bytes for every query whose result ever changed.) The
// contexts of a chunk are allocated together (nextLocked): the count of
// allocations, more than their bytes, is what the collector charges for.
type runContext struct {
	values   context.Context
	deadline time.Time
	// rec records the run's reads while its generation is gen.
	rec *readRecorder
	gen uint64

	mu sync.Mutex
	// members counts the queries the run is for that are still
	// subscribed; the run is cancelled when none is left. Guarded by the
	// registry's mutex.
	members int32
	// ended is why the run ended before inner was made.
	ended runEnd
	// inner is the context this one stands for, made at the first Done.
	inner *innerContext
	// result, when not nil, is a *R where the command's result goes
	// rather than into a box of its own (resultSlot); cleared at end.
	result any
}

// resultSlot is where the result of the re-run whose context is ctx goes:
// a *R of the command's result type R, taken from its resultWalk by the
// worker (job.resultSlot); nil when ctx is not a re-run's own context,
// which middleware of the user's may have replaced, or the run has none.
// The base handler writes the result there and returns the pointer, and
// the digest reads it in place (digest.Hasher.At): boxing a result in
// an any cost an allocation on every re-run, which the collector, busy
// during a fan-out, made about 3% of the fan-out benchmark's CPU.
func resultSlot(ctx context.Context) any {
	if rc, ok := ctx.(*runContext); ok {
		return rc.result
	}
	return nil
}

// innerContext is the context a runContext stands for once someone asked
// for Done.
type innerContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// runEnd is why a run's context ended: not yet, cancelled, or past its
// deadline.
type runEnd uint8

const (
	runLive runEnd = iota
	runCanceled
	runDeadline
)

func (e runEnd) err() error {
	switch e {
	case runCanceled:
		return context.Canceled
	case runDeadline:
		return context.DeadlineExceeded
	}
	return nil
}

// newRunContext makes the context of a run for members queries, which
// records its reads in rec (the worker's, started for this run); begin
// starts its clock.
func newRunContext(values context.Context, members int, rec *readRecorder) *runContext {
	rc := new(runContext)
	rc.init(values, members, rec)
	return rc
}

// init makes rc, zero, what newRunContext makes: for the runs of a chunk,
// whose contexts are allocated together (nextLocked).
func (rc *runContext) init(values context.Context, members int, rec *readRecorder) {
	rc.values, rc.members, rc.rec, rc.gen = values, int32(members), rec, rec.start()
}

// begin sets the deadline, timeout from start, as the run begins: a query
// of a chunk waits for those before it without spending its time. It is
// the one write of the deadline, made before the command has the context,
// and nothing else reads it before: so without the mutex.
func (rc *runContext) begin(start time.Time, timeout time.Duration) {
	rc.deadline = start.Add(timeout)
}

func (rc *runContext) Deadline() (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.deadline, true
}

// Done makes the context this one stands for, and with it the timer of the
// deadline, unless it is made already.
func (rc *runContext) Done() <-chan struct{} {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.inner == nil {
		var ctx context.Context
		var cancel context.CancelFunc
		if rc.ended == runCanceled {
			// Err said Canceled: so must the context made now, even
			// once the deadline has passed.
			ctx, cancel = context.WithCancel(rc.values)
			cancel()
		} else {
			ctx, cancel = context.WithDeadline(rc.values, rc.deadline)
			if rc.ended != runLive {
				cancel()
			}
		}
		rc.inner = &innerContext{ctx, cancel}
	}
	return rc.inner.ctx.Done()
}

func (rc *runContext) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case rc.inner != nil:
		return rc.inner.ctx.Err()
	case rc.ended != runLive:
		return rc.ended.err()
	case time.Until(rc.deadline) <= 0: // the monotonic clock alone (end)
		// No one holds Done, so none is open that would contradict it;
		// and from now on it stays the error, as a context's does.
		rc.ended = runDeadline
		return context.DeadlineExceeded
	}
	return nil
}

// Value answers the read recorder's key with rc itself, whose record
// checks that the recorder still records this run; other keys are the inner
// context's, once made, so that a context derived from this one finds its
// cancellation there, as it would on a context of package context, and
// needs no goroutine to follow it; until then, values'.
func (rc *runContext) Value(key any) any {
	if key == (readRecorderKey{}) {
		return rc
	}
	rc.mu.Lock()
	inner := rc.inner
	rc.mu.Unlock()
	if inner == nil {
		return rc.values.Value(key)
	}
	return inner.ctx.Value(key)
}

// record records keys for argument set i (-1 for the whole run), unless
// the run has returned.
func (rc *runContext) record(i int, keys []string) { rc.rec.add(rc.gen, i, keys) }

func (rc *runContext) String() string { return "adapter.runContext" }

// cancel ends the run early: its queries were dropped, or Close gave up.
// It is also called when the run has returned, like the cancel function of
// context.WithTimeout, so that a command that kept the context sees it end.
func (rc *runContext) cancel() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.inner != nil {
		rc.inner.cancel()
	} else if rc.ended == runLive {
		rc.ended = runCanceled
	}
}

// end ends the context when its run has returned, as cancel does, and
// returns the time, which the next run of a chunk begins at, and why the
// context had ended before: context.DeadlineExceeded for a run that
// outlived its deadline, context.Canceled for one cancelled, nil if it had
// not.
//
// It reads the monotonic clock alone, against the deadline, which carries
// the wall clock of the job's start: time.Now reads the wall clock too,
// and each read costs about 50ns on a virtual machine, 2% of a fan-out's
// CPU for one a re-run. The time returned is time.Now's on the monotonic
// clock, which orders and times everything here; on the wall clock it is
// the job's start plus the time elapsed since, so a step of the system
// clock during a job shows only in the next job's times.
func (rc *runContext) end() (time.Time, error) {
	rc.result = nil // the worker's: no later call may write it
	rc.mu.Lock()
	defer rc.mu.Unlock()
	past := time.Since(rc.deadline)
	now := rc.deadline.Add(past)
	var err error
	switch {
	case rc.inner != nil:
		err = rc.inner.ctx.Err()
		rc.inner.cancel()
	case rc.ended != runLive:
		err = rc.ended.err()
	case past >= 0:
		err = context.DeadlineExceeded
		rc.ended = runDeadline // as Err said, or would have
	}
	if rc.ended == runLive {
		rc.ended = runCanceled
	}
	return now, err
}
