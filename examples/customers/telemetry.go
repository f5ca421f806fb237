package main

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/mcplive/adapter"
	adapterotel "github.com/mcplive/adapter/otel"
)

// What the example tells operators: the adapter reports to OpenTelemetry
// (module github.com/mcplive/adapter/otel), and OpenTelemetry's Prometheus
// exporter serves the metrics at GET /metrics, named as docs/observability.md
// lists them. Spans go to OpenTelemetry's global TracerProvider, which
// records nothing until a program sets one with an exporter of its choice;
// each write passes its request's context to ChangedContext, so that a
// trace leads from the write to the re-runs and notifications it caused.

// telemetry is the example's OpenTelemetry: an Observer for the adapter and
// the /metrics handler.
type telemetry struct {
	observer *adapterotel.Telemetry
	meters   *sdkmetric.MeterProvider
	metrics  http.Handler // GET /metrics
	reg      metric.Registration
	// feedReg is the change feed's metrics (feedmetrics.go), on
	// PostgreSQL.
	feedReg metric.Registration
}

// newTelemetry makes the meter provider and its Prometheus exporter, on a
// registry of its own (not Prometheus's global one).
func newTelemetry(opts ...adapterotel.Option) (*telemetry, error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		// Named explicitly: the exporter's default may change, and the
		// names are a contract of the example.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		// Only the adapter's metrics, and only their own labels.
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, err
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	observer, err := adapterotel.New(append([]adapterotel.Option{adapterotel.WithMeterProvider(meters)}, opts...)...)
	if err != nil {
		return nil, errors.Join(err, meters.Shutdown(context.Background()))
	}
	return &telemetry{
		observer: observer,
		meters:   meters,
		metrics:  promhttp.HandlerFor(registry, promhttp.HandlerOpts{}),
	}, nil
}

// option is the adapter option that makes it report here.
func (t *telemetry) option() adapter.Option { return adapter.WithObserver(t.observer) }

// register adds the live registry's gauges of a, the adapter made with
// option.
func (t *telemetry) register(a *adapter.Adapter) error {
	reg, err := t.observer.Register(a)
	t.reg = reg
	return err
}

// close stops collecting; call it once the adapter is closed.
func (t *telemetry) close() error {
	var err error
	if t.reg != nil {
		err = t.reg.Unregister()
	}
	if t.feedReg != nil {
		err = errors.Join(err, t.feedReg.Unregister())
	}
	return errors.Join(err, t.meters.Shutdown(context.Background()))
}
