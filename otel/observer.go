package otel

import (
	"context"
	"time"

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

// Observe implements adapter.Observer: the adapter calls it as each
// operation begins.
func (t *Telemetry) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	c := t.command(op.Command)
	switch op.Kind {
	case adapter.OpCall:
		// Counted only: mcp-go's own tracing has a span for each call.
		return ctx, callObservation{t: t, c: c}
	case adapter.OpRead:
		attrs := []attribute.KeyValue{c.attr}
		if t.recordURIs {
			attrs = append(attrs, attribute.String(attrURI, op.URI))
		}
		return t.start(ctx, c, op, c.read, trace.WithAttributes(attrs...))
	case adapter.OpRerun:
		return t.startRerun(ctx, c, op)
	case adapter.OpNotify:
		return t.start(ctx, c, op, c.notify, trace.WithAttributes(c.attr, attribute.Int(attrSubscribers, op.Count)))
	}
	return ctx, callObservation{}
}

// startRerun starts the span of a re-run: a child of the first write that
// caused it and gave its context, linked to each such write.
func (t *Telemetry) startRerun(ctx context.Context, c *command, op adapter.Op) (context.Context, adapter.Observation) {
	parent := ctx
	var links []trace.Link
	for _, cause := range op.Causes {
		sc := trace.SpanContextFromContext(cause)
		if !sc.IsValid() {
			continue
		}
		if links == nil {
			parent = trace.ContextWithSpanContext(ctx, sc)
		}
		links = append(links, trace.Link{SpanContext: sc})
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(c.attr, attribute.StringSlice(attrKeys, op.Keys))}
	if links != nil {
		opts = append(opts, trace.WithLinks(links...))
	}
	ctx, o := t.start(parent, c, op, c.rerun, opts...)
	return ctx, o
}

// start starts a span named name for op, from op.Start.
func (t *Telemetry) start(ctx context.Context, c *command, op adapter.Op, name string, opts ...trace.SpanStartOption) (context.Context, *spanObservation) {
	start := op.Start
	if start.IsZero() {
		start = time.Now()
	}
	opts = append(opts, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal))
	ctx, span := t.tracer.Start(ctx, name, opts...)
	return ctx, &spanObservation{t: t, c: c, kind: op.Kind, ctx: ctx, span: span, start: start}
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
}

// Phase records a phase as a child span, when the operation's span is
// recorded at all.
func (o *spanObservation) Phase(name string, start, end time.Time) {
	if !o.span.IsRecording() {
		return
	}
	_, s := o.t.tracer.Start(o.ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal))
	s.End(trace.WithTimestamp(end))
}

func (o *spanObservation) End(outcome adapter.Outcome, err error) {
	in := &o.t.inst
	switch o.kind {
	case adapter.OpRead:
		in.reads.Add(o.ctx, 1, o.c.with(outcome))
		if outcome == adapter.OutcomeRateLimited {
			in.rateLimited.Add(o.ctx, 1, o.c.only)
		}
	case adapter.OpRerun:
		in.reruns.Add(o.ctx, 1, o.c.with(outcome))
		in.rerunDuration.Record(o.ctx, time.Since(o.start).Seconds(), o.c.only)
	}
	if o.span.IsRecording() {
		o.span.SetAttributes(attribute.String(attrOutcome, string(outcome)))
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

// callObservation counts a tools/call. It is two pointers: no span, and
// nothing to end but the count.
type callObservation struct {
	t *Telemetry
	c *command
}

func (callObservation) Phase(string, time.Time, time.Time) {}

func (o callObservation) End(outcome adapter.Outcome, _ error) {
	if o.t == nil {
		return
	}
	in := &o.t.inst
	ctx := context.Background()
	in.calls.Add(ctx, 1, o.c.with(outcome))
	if outcome == adapter.OutcomeRateLimited {
		in.rateLimited.Add(ctx, 1, o.c.only)
	}
}
