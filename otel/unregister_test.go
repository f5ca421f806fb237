package otel_test

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/mark3labs/mcp-go/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/otel"
)

// TestUnregisterEndsEverything: once the registration Register returned
// is unregistered, as the docs say to when the adapter is closed, the
// meter provider no longer holds the Telemetry: it reports none of its
// series, and it is garbage. An application that makes an adapter per
// tenant or per reload, on one meter provider, must not keep every
// Telemetry it ever made, nor export their frozen counts for ever.
func TestUnregisterEndsEverything(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

	gone := func() weak.Pointer[otel.Telemetry] {
		tel, err := otel.New(otel.WithMeterProvider(mp))
		if err != nil {
			t.Fatal(err)
		}
		a := adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithObserver(tel))
		reg, err := tel.Register(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []adapter.OpKind{adapter.OpCall, adapter.OpRead, adapter.OpRerun} {
			_, o := tel.Observe(context.Background(), adapter.Op{Kind: kind, Command: "c", Start: time.Now()})
			o.End(adapter.OutcomeOK, nil)
		}
		if n := points(t, reader); n == 0 {
			t.Fatal("nothing collected while registered")
		}
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
		_ = a.Close(context.Background())
		return weak.Make(tel)
	}()

	// The re-run duration is a synchronous histogram: the SDK keeps its
	// series, as it keeps any; the observed series must go.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if _, hist := m.Data.(metricdata.Histogram[float64]); !hist {
				t.Errorf("after Unregister, %s is still reported: %+v", m.Name, m.Data)
			}
		}
	}
	for range 5 {
		runtime.GC()
		if gone.Value() == nil {
			return
		}
	}
	t.Error("after Unregister, the meter provider still holds the Telemetry")
}

// points counts the data points collected now.
func points(t *testing.T, reader *sdkmetric.ManualReader) int {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				n += len(d.DataPoints)
			case metricdata.Gauge[int64]:
				n += len(d.DataPoints)
			case metricdata.Histogram[float64]:
				n += len(d.DataPoints)
			}
		}
	}
	return n
}
