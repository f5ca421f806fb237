package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
	adapterotel "github.com/mcplive/adapter/otel"
)

// callSpans starts a span for each command an agent invokes, as mcp-go's
// tracing does for a tools/call: the write's span, which its ChangedContext
// hands to the re-runs it causes.
func callSpans(tracer trace.Tracer) middleware.Middleware {
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			if call.Origin != middleware.Agent {
				return next(ctx, call)
			}
			ctx, span := tracer.Start(ctx, "call "+call.Command)
			defer span.End()
			return next(ctx, call)
		}
	}
}

func sumOf(t *testing.T, rm metricdata.ResourceMetrics, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if p.Attributes.Equals(&want) {
						return p.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if p.Attributes.Equals(&want) {
						return p.Value
					}
				}
			}
		}
	}
	return -1
}

func labels(command string, outcome adapter.Outcome) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("command", command), attribute.String("outcome", string(outcome))}
}

// TestTelemetry drives the example's server as agents would (subscribe,
// read, write through a tool) and checks what OpenTelemetry was told: the
// counts, and a trace that leads from the write to the re-runs and the
// notifications it caused.
func TestTelemetry(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() {
		meters.Shutdown(context.Background())
		tracers.Shutdown(context.Background())
	})
	tel, err := adapterotel.New(adapterotel.WithMeterProvider(meters), adapterotel.WithTracerProvider(tracers))
	if err != nil {
		t.Fatal(err)
	}
	a := newAdapter(newTestStore(t), quietLogger(), adapter.WithObserver(tel), adapter.WithMiddleware(callSpans(tracers.Tracer("test"))))
	reg, err := tel.Register(a)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	watcher, agent := adaptertest.New(t, a), adaptertest.New(t, a)
	sub, err := watcher.Listen("app://customers_show/1", "app://customers_index?search=ada", "app://customers_show/abc")
	if err != nil || len(sub.Acknowledged) != 2 {
		t.Fatalf("listen: %v %+v", err, sub)
	}
	if _, err := agent.Read("app://customers_show/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Read("app://customers_show/99999"); err == nil {
		t.Fatal("read a customer that does not exist")
	}
	if res, err := agent.CallTool("customers_update", map[string]any{"id": 1, "name": "Ada King"}); err != nil || res.IsError {
		t.Fatalf("customers_update: %v %+v", err, res)
	}
	watcher.WaitIdle()
	if got := sub.Take(); len(got) != 2 {
		t.Fatalf("notified %q, want both subscriptions", got)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"mcplive.reads", labels("customers_show", adapter.OutcomeOK), 1},
		{"mcplive.reads", labels("customers_show", adapter.OutcomeNotFound), 1},
		{"mcplive.calls", labels("customers_update", adapter.OutcomeOK), 1},
		{"mcplive.reruns", labels("customers_show", adapter.OutcomeChanged), 1},
		{"mcplive.reruns", labels("customers_index", adapter.OutcomeChanged), 1},
		{"mcplive.subscriptions", nil, 2},
		{"mcplive.live_queries", nil, 2},
		{"mcplive.pending_notifications", nil, 0},
		{"mcplive.notifications", nil, 2},
		{"mcplive.refused_subscriptions", nil, 1},
		{"mcplive.coalesced_changes", nil, 0},
	} {
		if got := sumOf(t, rm, tc.name, tc.attrs...); got != tc.want {
			t.Errorf("%s%v = %d, want %d", tc.name, tc.attrs, got, tc.want)
		}
	}

	// One trace: the write, the re-runs it caused (children of it, linked
	// to it), and under each the batch of notifications it queued.
	ended := spans.Ended()
	byName := func(name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range ended {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return out
	}
	writes := byName("call customers_update")
	if len(writes) != 1 {
		t.Fatalf("%d spans of the write", len(writes))
	}
	write := writes[0].SpanContext()
	for _, command := range []string{"customers_show", "customers_index"} {
		reruns := byName("rerun " + command)
		if len(reruns) != 1 {
			t.Fatalf("%d re-run spans of %s, want 1", len(reruns), command)
		}
		rr := reruns[0]
		if rr.Parent().SpanID() != write.SpanID() || rr.SpanContext().TraceID() != write.TraceID() {
			t.Errorf("the re-run of %s is not a child of the write", command)
		}
		if l := rr.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != write.SpanID() {
			t.Errorf("the re-run of %s links %+v, want the write", command, l)
		}
		notifies := byName("notify " + command)
		if len(notifies) != 1 || notifies[0].Parent().SpanID() != rr.SpanContext().SpanID() {
			t.Errorf("the notification batch of %s is not a child of its re-run", command)
		}
	}
	reads := byName("read customers_show")
	if len(reads) != 2 {
		t.Fatalf("%d read spans, want 2", len(reads))
	}
	var children, phases []string
	for _, s := range ended {
		if s.Parent().SpanID() == reads[0].SpanContext().SpanID() {
			children = append(children, s.Name())
		}
	}
	for _, kv := range reads[0].Attributes() {
		if strings.HasPrefix(string(kv.Key), "mcplive.phase.") {
			phases = append(phases, string(kv.Key))
		}
	}
	// The command's own span (the middleware's) nests under the read; the
	// read's phases are its attributes. The URI is subscribed: its query's
	// kept result answered, in place of the command, and the middleware
	// chain ran all the same.
	if want := []string{"call customers_show"}; !slices.Equal(children, want) {
		t.Errorf("children of the read %q, want %q", children, want)
	}
	if want := []string{"mcplive.phase.parse.duration", "mcplive.phase.convert.duration",
		"mcplive.phase.validate.duration", "mcplive.phase.kept.duration"}; !slices.Equal(phases, want) {
		t.Errorf("phases of the read %q, want %q", phases, want)
	}
}

// metricFamilies serves the example's HTTP routes for inst on a loopback
// port, as serveHTTP does, and returns what GET /metrics answers.
func metricFamilies(t *testing.T, inst *instance) map[string]*dto.MetricFamily {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, ln, inst, quietLogger()) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serveHTTP: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", res.StatusCode)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if page, err := http.Get(base + "/debug/live"); err != nil || page.StatusCode != 200 {
		t.Errorf("GET /debug/live: %v %v", err, page)
	} else {
		b, _ := io.ReadAll(page.Body)
		page.Body.Close()
		if !strings.Contains(string(b), `<tr data-command="customers_show" data-arguments="{&#34;id&#34;:1}">`) {
			t.Errorf("the live page does not show the subscription:\n%s", b)
		}
	}
	return families
}

// TestMetricsEndpoint pins the names, types and labels the example's
// GET /metrics exposes, as OpenTelemetry's Prometheus exporter maps them:
// docs/observability.md lists them, and dashboards depend on them.
func TestMetricsEndpoint(t *testing.T) {
	st := newTestStore(t)
	tel, err := newTelemetry()
	if err != nil {
		t.Fatal(err)
	}
	// A rate limit of one call per command and session, so that the
	// rate-limited counter has something to count.
	a := newAdapter(st, quietLogger(), tel.option(), adapter.WithRateLimit(rate.Every(time.Hour), 1))
	inst := &instance{st: st, a: a, tel: tel}
	if err := tel.register(a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Close(); err != nil {
			t.Error(err)
		}
	})
	c := adaptertest.New(t, a)
	if sub, err := c.Listen("app://customers_show/1", "app://nothing/1"); err != nil || len(sub.Acknowledged) != 1 {
		t.Fatalf("listen: %v %+v", err, sub)
	}
	if _, err := c.Read("app://customers_show/1"); err == nil { // the subscription spent the token
		t.Fatal("a read past the rate limit succeeded")
	}
	if res, err := c.CallTool("customers_update", map[string]any{"id": 1, "email": "ada@example.org"}); err != nil || res.IsError {
		t.Fatalf("customers_update: %v %+v", err, res)
	}
	c.WaitIdle()

	families := metricFamilies(t, inst)
	type family struct {
		typ    dto.MetricType
		labels string
	}
	want := map[string]family{
		"mcplive_subscriptions":                  {dto.MetricType_GAUGE, ""},
		"mcplive_live_queries":                   {dto.MetricType_GAUGE, ""},
		"mcplive_pending_notifications":          {dto.MetricType_GAUGE, ""},
		"mcplive_notifications_total":            {dto.MetricType_COUNTER, ""},
		"mcplive_coalesced_changes_total":        {dto.MetricType_COUNTER, ""},
		"mcplive_refused_subscriptions_total":    {dto.MetricType_COUNTER, ""},
		"mcplive_foreign_session_requests_total": {dto.MetricType_COUNTER, ""},
		"mcplive_reruns_total":                   {dto.MetricType_COUNTER, "command,outcome"},
		"mcplive_reads_total":                    {dto.MetricType_COUNTER, "command,outcome"},
		"mcplive_calls_total":                    {dto.MetricType_COUNTER, "command,outcome"},
		"mcplive_rate_limited_total":             {dto.MetricType_COUNTER, "command"},
		"mcplive_rerun_duration_seconds":         {dto.MetricType_HISTOGRAM, "command"},
		"mcplive_command_runs_total":             {dto.MetricType_COUNTER, "cause,command"},
		"mcplive_kept_results":                   {dto.MetricType_GAUGE, ""},
		"mcplive_kept_results_size_bytes":        {dto.MetricType_GAUGE, ""},
		"mcplive_kept_answers_total":             {dto.MetricType_COUNTER, ""},
	}
	var names []string
	for name, f := range families {
		names = append(names, name)
		w, ok := want[name]
		if !ok {
			continue
		}
		if f.GetType() != w.typ {
			t.Errorf("%s is a %v, want a %v", name, f.GetType(), w.typ)
		}
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName())
			}
			if got := strings.Join(ls, ","); got != w.labels {
				t.Errorf("%s has labels %q, want %q", name, got, w.labels)
			}
		}
	}
	slices.Sort(names)
	var wantNames []string
	for name := range want {
		wantNames = append(wantNames, name)
	}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("GET /metrics exposes\n%q\nwant\n%q", names, wantNames)
	}

	value := func(name string, labels ...string) float64 {
		for _, m := range families[name].GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName()+"="+l.GetValue())
			}
			if slices.Equal(got, labels) {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return m.GetGauge().GetValue()
			}
		}
		return -1
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mcplive_subscriptions", nil, 1},
		{"mcplive_live_queries", nil, 1},
		{"mcplive_notifications_total", nil, 1},
		{"mcplive_refused_subscriptions_total", nil, 1},
		{"mcplive_reruns_total", []string{"command=customers_show", "outcome=changed"}, 1},
		{"mcplive_rerun_duration_seconds", []string{"command=customers_show"}, 1},
		{"mcplive_reads_total", []string{"command=customers_show", "outcome=rate_limited"}, 1},
		{"mcplive_calls_total", []string{"command=customers_update", "outcome=ok"}, 1},
		{"mcplive_rate_limited_total", []string{"command=customers_show"}, 1},
		// The first run and the re-run ran customers_show; the refused read
		// did not. The write's command ran once, as a call.
		{"mcplive_command_runs_total", []string{"cause=subscribe", "command=customers_show"}, 1},
		{"mcplive_command_runs_total", []string{"cause=rerun", "command=customers_show"}, 1},
		{"mcplive_command_runs_total", []string{"cause=call", "command=customers_update"}, 1},
		{"mcplive_command_runs_total", []string{"cause=read", "command=customers_show"}, -1},
		{"mcplive_kept_results", nil, 1},
		{"mcplive_kept_answers_total", nil, 0},
	} {
		if got := value(tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
