package adapter

import (
	"context"
	"sync"
	"time"

	"github.com/mcplive/adapter/middleware"
)

// runContext is the context of one re-run of a live query, or of one
// batched re-run of several (livebatch.go). It behaves as
// context.WithTimeout(values, d) would, cancelled besides when the
// registry drops the queries it runs for or Close gives up on it, and it
// carries the run's read recorder and middleware.Call in the same
// allocation. values is the registry's: a context with origin Live and
// nothing else, made once.
//
// Why not context.WithTimeout: arming a timer for every re-run, and filing
// the context under its query's, was a tenth of a fan-out's CPU, and most
// commands never look at their context: an in-memory lookup returns long
// before any deadline. So the timer is armed only when someone asks for
// Done, by making the context it stands for then; until then Err reads the
// clock.
type runContext struct {
	values   context.Context
	deadline time.Time
	rec      readRecorder
	call     middleware.Call
	// members counts the queries the run is for that are still
	// subscribed; the run is cancelled when none is left. Guarded by the
	// registry's mutex.
	members int

	mu sync.Mutex
	// inner is the context this one stands for, made at the first Done.
	inner       context.Context
	cancelInner context.CancelFunc
	// err is why the run ended before inner was made.
	err error
}

// newRunContext makes the context of a run for members queries; begin
// starts its clock.
func newRunContext(values context.Context, members int) *runContext {
	rc := &runContext{values: values, members: members}
	rc.rec.keys = rc.rec.small[:0]
	return rc
}

// begin sets the deadline, timeout from start, as the run begins: a query
// of a chunk waits for those before it without spending its time.
func (rc *runContext) begin(start time.Time, timeout time.Duration) {
	rc.mu.Lock()
	rc.deadline = start.Add(timeout)
	rc.mu.Unlock()
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
		rc.inner, rc.cancelInner = context.WithDeadline(rc.values, rc.deadline)
		if rc.err != nil {
			rc.cancelInner()
		}
	}
	return rc.inner.Done()
}

func (rc *runContext) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case rc.inner != nil:
		return rc.inner.Err()
	case rc.err != nil:
		return rc.err
	case !time.Now().Before(rc.deadline):
		// No one holds Done, so none is open that would contradict it.
		return context.DeadlineExceeded
	}
	return nil
}

// Value answers the read recorder's key; other keys are the inner
// context's, once made, so that a context derived from this one finds its
// cancellation there, as it would on a context of package context, and
// needs no goroutine to follow it; until then, values'.
func (rc *runContext) Value(key any) any {
	if key == (readRecorderKey{}) {
		return &rc.rec
	}
	rc.mu.Lock()
	inner := rc.inner
	rc.mu.Unlock()
	if inner == nil {
		return rc.values.Value(key)
	}
	return inner.Value(key)
}

func (rc *runContext) String() string { return "adapter.runContext" }

// cancel ends the run early: its queries were dropped, or Close gave up.
// It is also called when the run has returned, like the cancel function of
// context.WithTimeout, so that a command that kept the context sees it end.
func (rc *runContext) cancel() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.inner != nil {
		rc.cancelInner()
	} else if rc.err == nil {
		rc.err = context.Canceled
	}
}

// end ends the context when its run has returned, as cancel does, and
// returns the time, which the next run of a chunk begins at (a clock read
// is a tenth of a trivial re-run on a virtual machine), and why the
// context had ended before: context.DeadlineExceeded for a run that
// outlived its deadline, context.Canceled for one cancelled, nil if it had
// not.
func (rc *runContext) end() (time.Time, error) {
	now := time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var err error
	switch {
	case rc.inner != nil:
		err = rc.inner.Err()
		rc.cancelInner()
	case rc.err != nil:
		err = rc.err
	case !now.Before(rc.deadline):
		err = context.DeadlineExceeded
	}
	if rc.err == nil {
		rc.err = context.Canceled
	}
	return now, err
}
