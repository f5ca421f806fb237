package adapter

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/middleware"
)

// An Observer is told what the adapter does, for metrics and traces. Set
// one with WithObserver; github.com/mcplive/adapter/otel is one on
// OpenTelemetry. Without one the adapter observes nothing and pays nothing:
// every call site is a nil check.
//
// Observe is called when an operation begins and returns the context the
// operation runs in, and an Observation that is told of its phases and,
// exactly once, of its end. An Observer that starts a span returns a
// context carrying it, so that whatever the command does (a database
// query with its own span) nests under it.
//
// The adapter calls an Observer from many goroutines at once, never while
// it holds a lock of its own; an Observer must be safe for concurrent use,
// return quickly, and never block: it is on the path of every read. A call
// of an Observer (or of its Observation) that panics is logged and counts
// as not made; the operation goes on.
type Observer interface {
	Observe(ctx context.Context, op Op) (context.Context, Observation)
}

// An Observation is one operation under way, made by Observer.Observe.
type Observation interface {
	// Phase reports that a phase of the operation (PhaseParse, ...) ran
	// from start to end. Phases are reported in order, each once it is
	// over, and all before End.
	Phase(name string, start, end time.Time)
	// End reports that the operation is over, how it went and, when it
	// failed, the error (nil otherwise).
	End(outcome Outcome, err error)
}

// An Op describes the operation an Observation is about. Which fields are
// set depends on its Kind.
type Op struct {
	Kind OpKind
	// Command is the name of the command concerned: a bounded set, fit
	// for a metric label.
	Command string
	// URI is the URI a read was sent for, as the client spelled it
	// (OpRead only). It holds arguments, which may be personal data: an
	// Observer should not record it by default, and never as a label.
	URI string
	// Keys are the changed keys that caused a re-run (OpRerun), in the
	// order they were reported, each once, at most MaxCauseKeys of them;
	// nil when the re-run was caused by a change of everything (a change
	// feed that may have missed changes) or by none.
	Keys []string
	// Causes are the contexts given to ChangedContext by the writes that
	// caused a re-run (OpRerun), oldest first, at most MaxCauses of them.
	// A tracing Observer makes the re-run a child of the first writer's
	// span and links it to all of them, so that one trace tells why a
	// subscriber was notified.
	Causes []context.Context
	// Count is the number of subscriptions told of a new result
	// (OpNotify); one whose previous notification is still pending gets
	// no second one. For OpRerun it is the number of queries a batched
	// re-run (WithBatch) ran in one call, and 0 for one query's: a batch
	// is one operation, whose outcome is internal when any of its queries
	// failed for a reason of the server's (End is given that error), else
	// changed when any of them notified.
	Count int
	// Start is when the operation began. For a read it is earlier than
	// the call to Observe: the URI is parsed and converted before the
	// command's handler runs (see Phase).
	Start time.Time
}

// OpKind says what an Op is.
type OpKind uint8

const (
	// OpRead is a resources/read of a URI the adapter owns: its phases are
	// PhaseParse, PhaseConvert, PhaseValidate and PhaseCommand, as far as
	// it got, and its outcome one of ok, invalid, not_found, rate_limited,
	// internal, canceled.
	OpRead OpKind = iota + 1
	// OpCall is a tools/call of a command, with the same outcomes as a
	// read and no phases.
	OpCall
	// OpRerun is a re-run of a live query after a change. Its outcome is
	// changed or unchanged (its subscribers were or were not notified;
	// with WithNotifyInterval, changed may notify later),
	// internal (it failed for a reason of the server's; a failure is a
	// result like any other, so changed and unchanged are also given with
	// a non-nil error), late (it outlived WithRerunTimeout), or dropped
	// (its last subscriber left while it ran). Its one phase is
	// PhaseCommand, the run itself (the query's, or the batch's call),
	// reported as it returns: End comes once the run is applied, which
	// for a worker's chunk of queries is after all of them ran.
	OpRerun
	// OpNotify is the queueing of a notification for each subscription of
	// a query whose re-run found a new result; Op.Count says how many. Its
	// context is the re-run's, and its outcome ok. Notifications that
	// WithNotifyInterval delayed are told when they go out, with a context
	// of their own (no re-run queued them then).
	OpNotify
)

// String returns the kind's name: read, call, rerun or notify.
func (k OpKind) String() string {
	switch k {
	case OpRead:
		return "read"
	case OpCall:
		return "call"
	case OpRerun:
		return "rerun"
	case OpNotify:
		return "notify"
	}
	return "unknown"
}

// The phases of a read, in order.
const (
	PhaseParse    = "parse"    // the URI split against the template
	PhaseConvert  = "convert"  // each string converted by its schema type
	PhaseValidate = "validate" // the schema and Validate checked
	PhaseCommand  = "command"  // the command ran, through the middleware chain
	// PhaseKept stands in for PhaseCommand when the live query's kept
	// result answered the read (WithKeptResults): the middleware chain
	// ran, the command did not.
	PhaseKept = "kept"
)

// Outcome says how an observed operation ended: a short word, fit for a
// metric label.
type Outcome string

// The outcomes of operations (see each OpKind for which it has).
const (
	OutcomeOK          Outcome = "ok"
	OutcomeInvalid     Outcome = "invalid"      // -32602 with the fields named
	OutcomeNotFound    Outcome = "not_found"    // resource-not-found
	OutcomeRateLimited Outcome = "rate_limited" // refused by WithRateLimit
	OutcomeInternal    Outcome = "internal"     // an error the agent does not see
	OutcomeChanged     Outcome = "changed"
	OutcomeUnchanged   Outcome = "unchanged"
	OutcomeLate        Outcome = "late"
	OutcomeDropped     Outcome = "dropped"

	// OutcomeRefused is a read, a tools/call or a subscription whose
	// request the scope function (WithScope) refused, or a re-run whose
	// grant was withdrawn: the command did not run.
	OutcomeRefused Outcome = "refused"

	// OutcomeCanceled is a read or a tools/call whose client gave up: the
	// request was cancelled, and the command returned its context's
	// error. The adapter logs it at Debug: no failure of the server's.
	OutcomeCanceled Outcome = "canceled"
)

// Bounds on what a re-run carries of its causes: a burst of writes costs
// a query one re-run, and its Op at most this much.
const (
	MaxCauseKeys = 16
	MaxCauses    = 8
)

// observe begins the Observer's observation of op, or none, at the cost of
// a branch, when no Observer is set: every read, tools/call and re-run
// takes one path, and observing is a hook on it.
func (a *Adapter) observe(ctx context.Context, op Op) (context.Context, Observation) {
	if a.cfg.observer == nil {
		return ctx, noObservation{}
	}
	return a.cfg.observer.Observe(ctx, op)
}

// now is the time, for an Observer's phases; the zero time when no
// Observer is set, so that an unobserved path reads no clock.
func (a *Adapter) now() time.Time {
	if a.cfg.observer == nil {
		return time.Time{}
	}
	return time.Now()
}

// outcomeOf classifies what an invocation returned, as the agent sees it.
func outcomeOf(err error) Outcome {
	if err == nil {
		return OutcomeOK
	}
	switch f := classify(err); f.kind {
	case failMalformed, failNotFound:
		return OutcomeNotFound
	case failInvalid:
		return OutcomeInvalid
	case failRateLimited:
		return OutcomeRateLimited
	case failPrepared:
		switch {
		case f.rpc.refused:
			return OutcomeRefused
		case f.rpc == errNotGranted, f.rpc.Code == mcp.RESOURCE_NOT_FOUND:
			return OutcomeNotFound
		case f.rpc.Code == mcp.INVALID_PARAMS:
			return OutcomeInvalid
		case f.rpc.Code == middleware.CodeRateLimited:
			return OutcomeRateLimited
		}
	}
	return OutcomeInternal
}

// requestOutcome is the outcome of a read or a tools/call whose context is
// ctx: outcomeOf's, but canceled when the request was cancelled and the
// command returned that, as Adapter.internal logs it.
func requestOutcome(ctx context.Context, err error) Outcome {
	o := outcomeOf(err)
	if o == OutcomeInternal && errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return OutcomeCanceled
	}
	return o
}

// rerunOutcome is the outcome of a re-run that was applied: whether it
// notified, unless it failed for a reason of the server's.
func rerunOutcome(err error, changed bool) Outcome {
	if err != nil {
		switch o := outcomeOf(err); {
		case o == OutcomeRefused:
			return o
		case o == OutcomeInternal && !errors.Is(err, context.Canceled):
			return OutcomeInternal
		}
	}
	if changed {
		return OutcomeChanged
	}
	return OutcomeUnchanged
}

// An Observer's panics.
//
// The adapter calls its Observer on request goroutines and on its own
// re-run workers, where a panic would end the process. An Observer is the
// user's code like a command (command.go), and a broken one must cost
// what it observes nothing: each of its calls that panics is logged at
// Error and counts as not made; an Observe that panics observes nothing.

// guardedObserver is the Observer WithObserver installs around the user's.
type guardedObserver struct {
	o     Observer
	guard *observerGuard
}

// observerGuard logs an Observer's panics: the first with its stack, the
// others without, since a broken Observer panics on every operation.
type observerGuard struct {
	logger  *slog.Logger
	stacked atomic.Bool
}

func (g *observerGuard) recovered(method string, op OpKind, command string) {
	v := recover()
	if v == nil {
		return
	}
	attrs := []slog.Attr{slog.String("method", method), slog.String("op", op.String()),
		slog.String("command", command), slog.Any("panic", v)}
	if g.stacked.CompareAndSwap(false, true) {
		attrs = append(attrs, slog.String("stack", string(debug.Stack())))
	}
	logger := g.logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(context.Background(), slog.LevelError, "adapter: Observer panicked", attrs...)
}

func (g guardedObserver) Observe(ctx context.Context, op Op) (context.Context, Observation) {
	octx, o := g.observe(ctx, op)
	if o == nil {
		return ctx, noObservation{}
	}
	return octx, guardedObservation{o: o, guard: g.guard, op: op.Kind, command: op.Command}
}

func (g guardedObserver) observe(ctx context.Context, op Op) (octx context.Context, o Observation) {
	defer g.guard.recovered("Observe", op.Kind, op.Command)
	octx, o = g.o.Observe(ctx, op)
	if octx == nil {
		octx = ctx
	}
	return octx, o
}

// guardedObservation is an Observation of the user's Observer, each call
// guarded.
type guardedObservation struct {
	o       Observation
	guard   *observerGuard
	op      OpKind
	command string
}

func (g guardedObservation) Phase(name string, start, end time.Time) {
	defer g.guard.recovered("Phase", g.op, g.command)
	g.o.Phase(name, start, end)
}

func (g guardedObservation) End(outcome Outcome, err error) {
	defer g.guard.recovered("End", g.op, g.command)
	g.o.End(outcome, err)
}

// noObservation is what an Observe that panicked, or returned none,
// observes: nothing.
type noObservation struct{}

func (noObservation) Phase(string, time.Time, time.Time) {}
func (noObservation) End(Outcome, error)                 {}

// What the live registry tells an Observer of re-runs and
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
// one batch's (batch.go); the zero value, none. It is a value, kept by
// the worker that runs the job: observing costs a re-run no allocation of
// the registry's.
type rerunObservation struct {
	obs Observer
	ctx context.Context // the re-run's, as the Observer made it
	o   Observation
	cmd string
	// start is the Op's Start: the run's phase (ran) begins there.
	start time.Time
	// How the re-run went, noted under the registry's lock (recordLocked)
	// and told without it (report).
	err      error
	changed  bool // a result changed
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

// recordLocked notes how the re-run went for q, once it was applied (or
// not: late, or q dropped): whether its result changed, and that it queued
// notified notifications. A batch's observation is settled once per query.
func (ro *rerunObservation) recordLocked(q *query, out runResult, late, changed bool, notified int) {
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
	ro.changed = ro.changed || changed
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
	outcome := rerunOutcome(ro.err, ro.changed)
	switch {
	case ro.late:
		outcome = OutcomeLate
	case !ro.applied:
		outcome = OutcomeDropped
	}
	ro.o.End(outcome, ro.err)
	*ro = rerunObservation{}
}
