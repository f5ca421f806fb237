package otel_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/otel"
)

// TestRerunParentIsASampledWrite: a re-run that several writes caused is a
// child of the first of them that is traced, that is sampled. Under the
// parent-based sampling the docs recommend, making it the child of an
// earlier write that was not sampled drops it, and the sampled write's
// trace no longer leads to the notifications it caused.
func TestRerunParentIsASampledWrite(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := otel.New(otel.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	write := func(tid byte, sampled bool) context.Context {
		cfg := trace.SpanContextConfig{TraceID: trace.TraceID{tid}, SpanID: trace.SpanID{tid}}
		if sampled {
			cfg.TraceFlags = trace.FlagsSampled
		}
		return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(cfg))
	}
	unsampled, sampled := write(1, false), write(2, true)
	for _, tc := range []struct {
		name   string
		causes []context.Context
	}{
		{"sampled first", []context.Context{sampled, unsampled}},
		{"sampled second", []context.Context{unsampled, sampled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, o := tel.Observe(context.Background(), adapter.Op{Kind: adapter.OpRerun, Command: "c", Causes: tc.causes, Start: time.Now()})
			o.End(adapter.OutcomeUnchanged, nil)
			spans := spansNamed(rec.Ended(), "rerun c")
			rec.Reset()
			if len(spans) != 1 {
				t.Fatalf("%d re-run spans, want 1, the sampled write's child", len(spans))
			}
			if p := spans[0].Parent(); p.TraceID() != (trace.TraceID{2}) {
				t.Errorf("parent %v, want the sampled write", p)
			}
			if n := len(spans[0].Links()); n != 2 {
				t.Errorf("%d links, want one to each write", n)
			}
		})
	}
}
