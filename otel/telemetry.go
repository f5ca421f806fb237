package otel

import (
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
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
	inst       instruments
	registered atomic.Bool
	// commands caches what each command's spans and measurements need,
	// by name: made once, then shared by every operation.
	commands sync.Map // string -> *command
}

var _ adapter.Observer = (*Telemetry)(nil)

// An Option configures New.
type Option func(*config)

type config struct {
	meters     metric.MeterProvider
	tracers    trace.TracerProvider
	recordURIs bool
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
// they are left out by default; metrics never carry them.
func WithResourceURIs() Option {
	return func(c *config) { c.recordURIs = true }
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
	t := &Telemetry{tracer: c.tracers.Tracer(ScopeName), recordURIs: c.recordURIs}
	if err := t.inst.init(c.meters.Meter(ScopeName)); err != nil {
		return nil, err
	}
	return t, nil
}

// command is what the spans and measurements of one command need, made
// once: span names, its attribute, and the attribute sets of its
// measurements by outcome.
type command struct {
	name                string
	read, rerun, notify string // span names
	attr                attribute.KeyValue
	only                metric.MeasurementOption // {command}
	// outcomes holds {command, outcome} for every outcome the adapter
	// names; it is not changed once made.
	outcomes map[adapter.Outcome]metric.MeasurementOption
}

func (t *Telemetry) command(name string) *command {
	if c, ok := t.commands.Load(name); ok {
		return c.(*command)
	}
	c := &command{
		name: name, read: "read " + name, rerun: "rerun " + name, notify: "notify " + name,
		attr:     attribute.String("mcplive.command", name),
		only:     metric.WithAttributeSet(attribute.NewSet(attribute.String(labelCommand, name))),
		outcomes: make(map[adapter.Outcome]metric.MeasurementOption),
	}
	for _, o := range []adapter.Outcome{
		adapter.OutcomeOK, adapter.OutcomeInvalid, adapter.OutcomeNotFound, adapter.OutcomeRateLimited,
		adapter.OutcomeInternal, adapter.OutcomeChanged, adapter.OutcomeUnchanged, adapter.OutcomeLate,
		adapter.OutcomeDropped,
	} {
		c.outcomes[o] = c.measure(o)
	}
	actual, _ := t.commands.LoadOrStore(name, c)
	return actual.(*command)
}

// with returns the attribute set {command, outcome}.
func (c *command) with(outcome adapter.Outcome) metric.MeasurementOption {
	if m, ok := c.outcomes[outcome]; ok {
		return m
	}
	return c.measure(outcome)
}

func (c *command) measure(outcome adapter.Outcome) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(
		attribute.String(labelCommand, c.name),
		attribute.String(labelOutcome, string(outcome)),
	))
}
