package adapter

import (
	"context"
	"errors"
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
// as not made; the operation goes on (observeguard.go).
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
	// changed or unchanged (its subscribers were or were not notified),
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
	// context is the re-run's, and its outcome ok.
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
	if err != nil && outcomeOf(err) == OutcomeInternal && !errors.Is(err, context.Canceled) {
		return OutcomeInternal
	}
	if changed {
		return OutcomeChanged
	}
	return OutcomeUnchanged
}
