package otel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/otel"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

func benchTelemetry(b *testing.B, sampler sdktrace.Sampler) *otel.Telemetry {
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tracers := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sampler))
	b.Cleanup(func() {
		_ = tracers.Shutdown(context.Background())
		_ = meters.Shutdown(context.Background())
	})
	tel, err := otel.New(otel.WithMeterProvider(meters), otel.WithTracerProvider(tracers))
	if err != nil {
		b.Fatal(err)
	}
	return tel
}

// BenchmarkObserveRead is what the telemetry adds to one read: its span,
// four phase spans and a count. The bench module measures it inside a
// whole read (BenchmarkReadAdapterTelemetry).
func BenchmarkObserveRead(b *testing.B) {
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{{"sampled", sdktrace.AlwaysSample()}, {"unsampled", sdktrace.NeverSample()}} {
		b.Run(tc.name, func(b *testing.B) {
			tel := benchTelemetry(b, tc.sampler)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				_, o := tel.Observe(ctx, adapter.Op{Kind: adapter.OpRead, Command: "items_show", URI: "app://items_show/1", Start: t0})
				o.Phase(adapter.PhaseParse, t0, t0)
				o.Phase(adapter.PhaseConvert, t0, t0)
				o.Phase(adapter.PhaseValidate, t0, t0)
				o.Phase(adapter.PhaseCommand, t0, t0)
				o.End(adapter.OutcomeOK, nil)
			}
		})
	}
}

// BenchmarkObserveRerun is what the telemetry adds to one re-run that
// notifies: its span, linked to a write, a count, a duration, and the span
// of the notification batch.
func BenchmarkObserveRerun(b *testing.B) {
	tel := benchTelemetry(b, sdktrace.AlwaysSample())
	tracer := sdktrace.NewTracerProvider().Tracer("writer")
	writer, span := tracer.Start(context.Background(), "write")
	span.End()
	causes := []context.Context{writer}
	keys := []string{"orders/12"}
	b.ReportAllocs()
	for b.Loop() {
		ctx, o := tel.Observe(context.Background(), adapter.Op{Kind: adapter.OpRerun, Command: "orders_of", Keys: keys, Causes: causes, Start: time.Now()})
		_, n := tel.Observe(ctx, adapter.Op{Kind: adapter.OpNotify, Command: "orders_of", Count: 10, Start: time.Now()})
		n.End(adapter.OutcomeOK, nil)
		o.End(adapter.OutcomeChanged, nil)
	}
}

// BenchmarkObserveRerunUntraced is BenchmarkObserveRerun for a re-run
// that no traced write caused: a count and a duration.
func BenchmarkObserveRerunUntraced(b *testing.B) {
	tel := benchTelemetry(b, sdktrace.AlwaysSample())
	keys := []string{"orders/12"}
	b.ReportAllocs()
	for b.Loop() {
		ctx, o := tel.Observe(context.Background(), adapter.Op{Kind: adapter.OpRerun, Command: "orders_of", Keys: keys, Start: time.Now()})
		_, n := tel.Observe(ctx, adapter.Op{Kind: adapter.OpNotify, Command: "orders_of", Count: 10, Start: time.Now()})
		n.End(adapter.OutcomeOK, nil)
		o.End(adapter.OutcomeChanged, nil)
	}
}
