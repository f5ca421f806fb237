package otel_test

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/otel"
)

// New makes the Observer; Register adds the live registry's gauges. Here
// the metrics go to a ManualReader; in production, to an exporter such as
// go.opentelemetry.io/otel/exporters/prometheus.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider()
	defer mp.Shutdown(context.Background())
	defer tp.Shutdown(context.Background())

	tel, err := otel.New(otel.WithMeterProvider(mp), otel.WithTracerProvider(tp))
	if err != nil {
		panic(err)
	}
	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"), adapter.WithObserver(tel))
	reg, err := tel.Register(a)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	type showArgs struct {
		ID int64 `json:"id"`
	}
	adapter.Live(a, "customers_show", "One customer.", func(ctx context.Context, args showArgs) (string, error) {
		return "Ada Lovelace", nil
	})
	a.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://customers_show/12"}}`))

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "mcplive.reads" {
			for _, p := range sum.DataPoints {
				command, _ := p.Attributes.Value("command")
				outcome, _ := p.Attributes.Value("outcome")
				fmt.Println(m.Name, command.AsString(), outcome.AsString(), p.Value)
			}
		}
	}
	// Output: mcplive.reads customers_show ok 1
}
