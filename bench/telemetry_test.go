package bench

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcplive/adapter"
	adapterotel "github.com/mcplive/adapter/otel"
)

// The ...Telemetry benchmarks are their namesakes with the adapter
// reporting to OpenTelemetry (module github.com/mcplive/adapter/otel) as a
// busy production server would: the SDK's meter provider, collected on
// demand (a Prometheus scrape), and its tracer provider sampling one trace
// in a hundred into a batch span processor, whose exporter drops the
// batches. What they cost beyond their namesakes is the telemetry's;
// docs/observability.md holds them to 5%. The ...EverySpan and ...Traced
// variants record every span, to show what tracing everything costs.

// discard is a span exporter that exports nowhere.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// sampledOne is the production sampler: a trace in a hundred, and every
// span whose parent is sampled.
func sampledOne() sdktrace.Sampler {
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))
}

// telemetryOn returns the option that makes an adapter report to a fresh
// OpenTelemetry SDK, shut down when the benchmark ends, and that SDK's
// tracer provider.
func telemetryOn(b *testing.B, sampler sdktrace.Sampler) (adapter.Option, *sdktrace.TracerProvider) {
	b.Helper()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tracers := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sampler))
	b.Cleanup(func() {
		_ = tracers.Shutdown(context.Background())
		_ = meters.Shutdown(context.Background())
	})
	tel, err := adapterotel.New(adapterotel.WithMeterProvider(meters), adapterotel.WithTracerProvider(tracers))
	if err != nil {
		b.Fatal(err)
	}
	return adapter.WithObserver(tel), tracers
}

// BenchmarkReadAdapterTelemetry is BenchmarkReadAdapter observed: a count
// per read, and a span for one read in a hundred.
func BenchmarkReadAdapterTelemetry(b *testing.B) {
	on, _ := telemetryOn(b, sampledOne())
	benchRead(b, adapterServer(1, on))
}

// BenchmarkReadAdapterTelemetryEverySpan is BenchmarkReadAdapter with a
// span for every read.
func BenchmarkReadAdapterTelemetryEverySpan(b *testing.B) {
	on, _ := telemetryOn(b, sdktrace.AlwaysSample())
	benchRead(b, adapterServer(1, on))
}

// BenchmarkFanoutTelemetry is BenchmarkFanout observed: a count and a
// duration per re-run. The change comes from no traced write, so the
// re-runs have no spans.
func BenchmarkFanoutTelemetry(b *testing.B) {
	on, _ := telemetryOn(b, sampledOne())
	benchFanout(b, realisticCmd, on)
}

// BenchmarkFanoutTelemetryTraced is BenchmarkFanoutTelemetry with the
// change reported by a traced (sampled) write: every one of the 1,000
// re-runs gets a span, a child of the write's, and so does its batch of
// notifications.
func BenchmarkFanoutTelemetryTraced(b *testing.B) {
	on, tracers := telemetryOn(b, sdktrace.AlwaysSample())
	writer, span := tracers.Tracer("bench").Start(context.Background(), "write")
	defer span.End()
	benchFanoutFrom(b, writer, realisticCmd, on)
}

// BenchmarkFanoutTrivialTelemetry is BenchmarkFanoutTrivial observed.
func BenchmarkFanoutTrivialTelemetry(b *testing.B) {
	on, _ := telemetryOn(b, sampledOne())
	benchFanout(b, trivialCmd, on)
}
