package adapter

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Reads records, inside a live command, what this run of it read, so that a
// subscription to it re-runs when a write changes any of it (see
// Adapter.Changed).
//
// A key names data in the application's own terms. Two forms are
// understood:
//
//   - a table: "customers";
//   - a row of a table: the table, a slash and the row's id: "customers/12".
//
// A change of key k affects a run that read key r when k == r, or when one
// of the two is the table of the other. The table of a key is what precedes
// its first slash (the key itself when it has none). So a change of
// "customers/12" re-runs the queries that read "customers/12" or the whole
// of "customers", but not one that read only "customers/13"; a change of
// "customers" re-runs every query that read "customers" or any row of it.
// A command that reports rows rather than tables therefore narrows its
// re-runs without any other change: writers may keep reporting tables, and
// a writer that reports rows narrows them further.
//
//	func showCustomer(ctx context.Context, args ShowArgs) (Customer, error) {
//		adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
//		return db.customer(ctx, args.ID)
//	}
//
// Report what the run actually read, including what it found missing: a
// query that answered ErrNotFound for customer 12 read "customers/12" too.
// Keys a command always reads can be declared once with WithReads. A run
// that reports no key at all and whose command declares none re-runs on
// every change, since nothing says what it depends on.
//
// Reads is safe for concurrent use by goroutines of one run. Outside a
// subscription's run (a plain tools/call or resources/read, or a context
// the adapter did not make) it does nothing, so commands call it
// unconditionally. Empty keys are ignored. A nil ctx panics.
//
// In a batched re-run (WithBatch), Reads records keys that every argument
// set of the batch read; ReadsAt records those of one.
func Reads(ctx context.Context, keys ...string) {
	if ctx == nil {
		panic("adapter: Reads: nil context") // as Close(nil): named, not a nil dereference
	}
	record(ctx, -1, keys)
}

// ReadsAt records, inside the batch form of a live command (WithBatch), that
// argument set i of the batch, args[i], read keys: it is what Reads is to a
// single run. A batch function calls it for each argument set, with the
// keys that set's own run would report, so that a later change re-runs only
// the subscriptions it affects:
//
//	for i, a := range args {
//		adapter.ReadsAt(ctx, i, fmt.Sprintf("customers/%d", a.ID))
//	}
//
// Outside a batched re-run, and for an i out of the batch's range, it
// records keys as Reads does, for the whole run: more re-runs, never fewer.
// So a single form that calls its batch form with one argument set reports
// what it read.
func ReadsAt(ctx context.Context, i int, keys ...string) {
	if ctx == nil {
		panic("adapter: ReadsAt: nil context")
	}
	record(ctx, i, keys)
}

// record records keys for argument set i in the recorder ctx carries: a
// re-run's context, or a first run's recorder
// (withReadRecorder).
func record(ctx context.Context, i int, keys []string) {
	switch rec := ctx.Value(readRecorderKey{}).(type) {
	case *runContext:
		rec.record(i, keys)
	case *readRecorder:
		rec.add(0, i, keys)
	}
}

type readRecorderKey struct{}

// readRecorder collects the keys one run of a live query reports, or, for
// a batched run, those of each of its argument sets.
//
// A worker reuses one recorder for the runs it makes one after another
// (start); gen is the run it records, so that a context a command kept
// records nothing into the runs after its own.
type readRecorder struct {
	mu    sync.Mutex
	keys  []string // read by the whole run
	batch *batchReads
	gen   uint64
	done  bool // the run has returned; late reports are ignored
	// small is the first array of keys, so that a run that reads a key or
	// two allocates nothing for it.
	small [2]string
}

// batchReads is what a batched run's recorder keeps besides.
type batchReads struct {
	per     [][]string // read by argument set i alone
	scratch []string   // where each set's read set is put together
}

// start readies the recorder for a new run and returns its generation.
func (r *readRecorder) start() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.batch, r.done = nil, false
	clear(r.keys) // keep no key of an earlier run alive
	if r.keys = r.keys[:0]; cap(r.keys) <= len(r.small) || cap(r.keys) > maxKeptReads {
		r.keys = r.small[:0]
	}
	return r.gen
}

// maxKeptReads is how many keys' room a recorder keeps for its next run.
const maxKeptReads = 64

// forBatch makes the recorder one of a batched run of n argument sets.
func (r *readRecorder) forBatch(n int) {
	r.batch = &batchReads{per: make([][]string, n)}
}

func withReadRecorder(ctx context.Context) (context.Context, *readRecorder) {
	rec := &readRecorder{}
	rec.keys = rec.small[:0]
	return context.WithValue(ctx, readRecorderKey{}, rec), rec
}

// add records keys for argument set i, or for the whole run when i is not
// one (-1 for Reads), if gen is the run the recorder records and it has
// not returned.
func (r *readRecorder) add(gen uint64, i int, keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || r.gen != gen {
		return
	}
	dst := &r.keys
	if b := r.batch; b != nil && i >= 0 && i < len(b.per) {
		dst = &b.per[i]
	}
	for _, k := range keys {
		if k != "" {
			*dst = append(*dst, k)
		}
	}
}

// finish closes the recorder of a single run and returns its keys and
// static, sorted and without duplicates: the read set of the run.
func (r *readRecorder) finish(static []string) []string {
	r.close()
	return r.readSet(-1, static, nil)
}

// close makes the recorder ignore what is reported from now on.
func (r *readRecorder) close() {
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
}

// readSet returns, once the recorder is closed, the read set of argument
// set i of a batch (-1 for a single run): the run's keys, i's and static,
// sorted and without duplicates. When that equals prev, the read set a
// query had, it returns prev itself, so that a re-run that read what it
// read before allocates nothing for it.
func (r *readRecorder) readSet(i int, static, prev []string) []string {
	set := r.keys
	if i >= 0 {
		// The run's keys are every argument set's: put each set
		// together apart from them.
		set = append(append(r.batch.scratch[:0], r.keys...), r.batch.per[i]...)
	}
	for _, k := range static {
		if k != "" {
			set = append(set, k)
		}
	}
	if i >= 0 {
		r.batch.scratch = set
	}
	if len(set) == 0 {
		return nil
	}
	slices.Sort(set)
	set = slices.Compact(set)
	if slices.Equal(set, prev) {
		return prev
	}
	return slices.Clone(set)
}

// runContext is the context of one re-run of a live query, or of one
// batched re-run of several (batch.go). It behaves as
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
