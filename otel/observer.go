package otel

import (
	"context"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplive/adapter"
)

// Span attributes (see the package doc).
const (
	attrOutcome     = "mcplive.outcome"
	attrKeys        = "mcplive.keys"
	attrSubscribers = "mcplive.subscribers"
	attrURI         = "mcp.resource.uri"
)

// maxURIAttr bounds the URI a span records (WithResourceURIs), in bytes:
// the client chooses its length, and the adapter refuses any longer than
// this (its maxURILength), so what is cut was never served.
const maxURIAttr = 2048

// boundedURI is uri, or its first maxURIAttr bytes, cut on a rune
// boundary, and "…".
func boundedURI(uri string) string {
	if len(uri) <= maxURIAttr {
		return uri
	}
	cut := maxURIAttr
	for cut > 0 && !utf8.RuneStart(uri[cut]) {
		cut--
	}
	return uri[:cut] + "…"
}

// internalSpan is the kind of every span here: work inside the server.
var internalSpan = trace.WithSpanKind(trace.SpanKindInternal)

// Observe implements adapter.Observer: the adapter calls it as each
// operation begins.
func (t *Telemetry) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	c := t.commands.get(op.Command)
	switch op.Kind {
	case adapter.OpCall:
		// Counted only: mcp-go's own tracing has a span for each call.
		return ctx, callObservation{c: c}
	case adapter.OpRead:
		if t.recordURIs {
			return t.start(ctx, c, op, c.read, trace.WithAttributes(c.attr, attribute.String(attrURI, boundedURI(op.URI))))
		}
		return t.start(ctx, c, op, c.read, c.attrOnly)
	case adapter.OpRerun:
		return t.startRerun(ctx, c, op)
	case adapter.OpNotify:
		if !trace.SpanFromContext(ctx).IsRecording() {
			// Its re-run is not traced: neither is the batch.
			return ctx, callObservation{}
		}
		return t.start(ctx, c, op, c.notify, trace.WithAttributes(c.attr, attribute.Int(attrSubscribers, op.Count)))
	}
	return ctx, callObservation{}
}

// startRerun starts the span of a re-run: a child of the first traced
// write that caused it, linked to each. The first that was sampled, if
// any: under a parent-based sampler, a child of an earlier write that was
// not would be dropped, and the sampled write's trace would lose the
// re-run. A re-run that no traced write caused is only counted and timed,
// unless WithRootRerunSpans.
func (t *Telemetry) startRerun(ctx context.Context, c *command, op adapter.Op) (context.Context, adapter.Observation) {
	parent := ctx
	var links []trace.Link
	var parentSampled bool
	for _, cause := range op.Causes {
		sc := trace.SpanContextFromContext(cause)
		if !sc.IsValid() {
			continue
		}
		if links == nil || !parentSampled && sc.IsSampled() {
			parent = trace.ContextWithSpanContext(ctx, sc)
			parentSampled = sc.IsSampled()
		}
		links = append(links, trace.Link{SpanContext: sc})
	}
	if links == nil && !t.rootReruns {
		start := op.Start
		if start.IsZero() {
			start = time.Now()
		}
		return ctx, &rerunObservation{t: t, c: c, start: start, queries: queries(op)}
	}
	attrs := trace.WithAttributes(c.attr, attribute.StringSlice(attrKeys, op.Keys))
	if links != nil {
		return t.start(parent, c, op, c.rerun, attrs, trace.WithLinks(links...))
	}
	return t.start(parent, c, op, c.rerun, attrs)
}

// start starts a span named name for op, from op.Start, with opts (at
// most two).
func (t *Telemetry) start(ctx context.Context, c *command, op adapter.Op, name string, opts ...trace.SpanStartOption) (context.Context, adapter.Observation) {
	start := op.Start
	if start.IsZero() {
		start = time.Now()
	}
	all := make([]trace.SpanStartOption, 0, 4)
	all = append(all, opts...)
	all = append(all, trace.WithTimestamp(start), internalSpan)
	ctx, span := t.tracer.Start(ctx, name, all...)
	if !span.IsRecording() {
		// Not sampled: ctx carries the decision to what runs under it,
		// and only the measurements are left to make.
		switch op.Kind {
		case adapter.OpRead:
			return ctx, readCount{c: c}
		case adapter.OpRerun:
			return ctx, &rerunObservation{t: t, c: c, start: start, queries: queries(op)}
		}
		return ctx, callObservation{}
	}
	return ctx, &spanObservation{t: t, c: c, kind: op.Kind, ctx: ctx, span: span, start: start, queries: queries(op)}
}

// queries is the number of queries a re-run ran: a batched re-run
// (adapter.WithBatch) is one operation for op.Count of them, and counts as
// that many re-runs, as Adapter.LiveStats counts them.
func queries(op adapter.Op) int64 {
	if op.Kind == adapter.OpRerun && op.Count > 1 {
		return int64(op.Count)
	}
	return 1
}

// spanObservation is a read, a re-run or a notification batch: a span,
// and the measurements its end makes.
type spanObservation struct {
	t     *Telemetry
	c     *command
	kind  adapter.OpKind
	ctx   context.Context // carries span: the parent of the phases
	span  trace.Span
	start time.Time
	// queries is how many re-runs a re-run counts as (see queries).
	queries int64
	// ran is when a re-run's run returned (see ranAt).
	ran time.Time
	// phases and the outcome are set on the span at End, in one call: a
	// read's four phases and its outcome. A phase beyond them is dropped.
	phases  [5]attribute.KeyValue
	nphases int
}

// Phase records a phase, when the operation's span is recorded at all: as
// the attribute mcplive.phase.<name>.duration of the span (seconds), set
// with the outcome at End, or with WithPhaseSpans as a child span.
func (o *spanObservation) Phase(name string, start, end time.Time) {
	if o.kind == adapter.OpRerun {
		o.ran = ranAt(o.ran, name, end)
	}
	if !o.span.IsRecording() {
		return
	}
	if o.t.phaseSpans {
		_, s := o.t.tracer.Start(o.ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal))
		s.End(trace.WithTimestamp(end))
		return
	}
	if o.nphases < len(o.phases)-1 { // the last is End's outcome
		o.phases[o.nphases] = attribute.Float64(phaseKey(name), end.Sub(start).Seconds())
		o.nphases++
	}
}

// phaseKey is the attribute of a phase's duration.
func phaseKey(name string) string {
	switch name {
	case adapter.PhaseParse:
		return "mcplive.phase.parse.duration"
	case adapter.PhaseConvert:
		return "mcplive.phase.convert.duration"
	case adapter.PhaseValidate:
		return "mcplive.phase.validate.duration"
	case adapter.PhaseCommand:
		return "mcplive.phase.command.duration"
	case adapter.PhaseKept:
		return "mcplive.phase.kept.duration"
	}
	return "mcplive.phase." + name + ".duration"
}

func (o *spanObservation) End(outcome adapter.Outcome, err error) {
	in := &o.t.inst
	switch o.kind {
	case adapter.OpRead:
		readCount{o.c}.End(outcome, err)
	case adapter.OpRerun:
		in.rerunEnded(o.ctx, o.c, outcome, err, o.start, o.ran, o.queries)
	}
	if o.span.IsRecording() {
		o.phases[o.nphases] = attribute.String(attrOutcome, string(outcome))
		o.span.SetAttributes(o.phases[:o.nphases+1]...)
		// Refusals (invalid, not found, rate limited) are the agent's
		// doing, not failures of the server's.
		if outcome == adapter.OutcomeInternal || outcome == adapter.OutcomeLate {
			if err != nil {
				o.span.RecordError(err)
			}
			o.span.SetStatus(codes.Error, string(outcome))
		}
	}
	o.span.End()
}

// readCount counts a read that is not traced.
type readCount struct {
	c *command
}

func (readCount) Phase(string, time.Time, time.Time) {}

func (o readCount) End(outcome adapter.Outcome, _ error) {
	o.c.reads.add(outcome)
	if outcome == adapter.OutcomeRateLimited {
		o.c.rateLimited.Add(1)
	}
}

// rerunObservation counts and times a re-run that is not traced.
type rerunObservation struct {
	t       *Telemetry
	c       *command
	start   time.Time
	queries int64     // see queries
	ran     time.Time // see ranAt
}

func (o *rerunObservation) Phase(name string, _, end time.Time) {
	o.ran = ranAt(o.ran, name, end)
}

func (o *rerunObservation) End(outcome adapter.Outcome, err error) {
	o.t.inst.rerunEnded(context.Background(), o.c, outcome, err, o.start, o.ran, o.queries)
}

// ranAt is when a re-run's run returned: the end of its PhaseCommand, or
// ran when name is another phase. The re-run's End comes when the worker
// has applied it, after the rest of its chunk ran: timed to End, the first
// of a chunk of 16 would count as sixteen runs.
func ranAt(ran time.Time, name string, end time.Time) time.Time {
	if name == adapter.PhaseCommand {
		return end
	}
	return ran
}

// callObservation counts a tools/call: no span, and nothing to end but
// the count. One pointer, so that it is an Observation without an
// allocation; the zero value observes nothing.
type callObservation struct {
	c *command
}

func (callObservation) Phase(string, time.Time, time.Time) {}

func (o callObservation) End(outcome adapter.Outcome, _ error) {
	if o.c == nil {
		return
	}
	o.c.calls.add(outcome)
	if outcome == adapter.OutcomeRateLimited {
		o.c.rateLimited.Add(1)
	}
}
