package otel

import (
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplive/adapter"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/mcplive/adapter/otel"

// Telemetry is an adapter.Observer that reports to OpenTelemetry. Make one
// with New, give it to adapter.Wrap with adapter.WithObserver, then
// Register the adapter for the registry's gauges. It is safe for
// concurrent use. One Telemetry serves one Adapter.
type Telemetry struct {
	tracer     trace.Tracer
	recordURIs bool
	phaseSpans bool
	rootReruns bool
	inst       instruments
	registered atomic.Bool
	// commands holds what each command's spans and measurements need,
	// and its counts (commands.go).
	commands commands
}

var _ adapter.Observer = (*Telemetry)(nil)

// An Option configures New.
type Option func(*config)

type config struct {
	meters     metric.MeterProvider
	tracers    trace.TracerProvider
	recordURIs bool
	phaseSpans bool
	rootReruns bool
}

// WithMeterProvider sets where metrics go; by default the global
// provider (go.opentelemetry.io/otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// WithTracerProvider sets where spans go; by default the global provider
// (go.opentelemetry.io/otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracers = tp }
}

// WithResourceURIs records the URI of each read on its span
// (mcp.resource.uri). URIs hold arguments, which may be personal data, so
// they are left out by default; metrics never carry them. A URI longer
// than the adapter serves (2048 bytes) is recorded cut there, with "…".
func WithResourceURIs() Option {
	return func(c *config) { c.recordURIs = true }
}

// WithPhaseSpans records each phase of a read (parse, convert, validate,
// command) as a child span of the read, rather than as an attribute of it
// (mcplive.phase.<name>.duration, in seconds). Four more spans a read make
// the phases plain on a trace's timeline, at a cost: on a trivial command
// served in process, telemetry then costs a read about a fifth of its time
// rather than a twentieth (docs/observability.md).
func WithPhaseSpans() Option {
	return func(c *config) { c.phaseSpans = true }
}

// WithRootRerunSpans traces every re-run. By default a re-run has a span
// only when a traced write caused it (its ChangedContext carried a span
// context), as a child of that write: a Changed without a context, or a
// change heard from the change feed, re-runs queries uncounted by traces
// but counted and timed by the metrics. With this option those re-runs are
// traced too, each as the root of a trace of its own; one change can
// re-run thousands of queries, so sample them (docs/observability.md).
func WithRootRerunSpans() Option {
	return func(c *config) { c.rootReruns = true }
}

// New makes a Telemetry and its instruments. It fails only when the meter
// refuses an instrument.
func New(opts ...Option) (*Telemetry, error) {
	c := config{meters: otel.GetMeterProvider(), tracers: otel.GetTracerProvider()}
	for _, o := range opts {
		o(&c)
	}
	if c.meters == nil || c.tracers == nil {
		return nil, errors.New("otel: nil MeterProvider or TracerProvider")
	}
	t := &Telemetry{tracer: c.tracers.Tracer(ScopeName), recordURIs: c.recordURIs, phaseSpans: c.phaseSpans, rootReruns: c.rootReruns}
	if err := t.inst.init(c.meters.Meter(ScopeName), t.commands.each); err != nil {
		return nil, err
	}
	return t, nil
}
