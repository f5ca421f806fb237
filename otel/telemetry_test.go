package otel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/otel"
)

// harness is an adapter observed by a Telemetry whose metrics and spans
// stay in memory.
type harness struct {
	a      *adapter.Adapter
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer trace.Tracer // for the writer's own spans
	store  *store
}

type store struct {
	mu    sync.Mutex
	names map[int]string
}

func (s *store) get(id int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.names[id]
	return n, ok
}

func (s *store) set(id int, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[id] = name
}

type showArgs struct {
	ID int `json:"id" jsonschema:"minimum=1"`
}

func newHarness(t *testing.T, sampler sdktrace.Sampler, telOpts []otel.Option, opts ...adapter.Option) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), store: &store{names: map[int]string{1: "Ada"}}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans), sdktrace.WithSampler(sampler))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	h.tracer = tp.Tracer("test")
	tel, err := otel.New(append(telOpts, otel.WithMeterProvider(mp), otel.WithTracerProvider(tp))...)
	if err != nil {
		t.Fatal(err)
	}
	h.a = adapter.Wrap(server.NewMCPServer("t", "1"), append(opts, adapter.WithObserver(tel))...)
	reg, err := tel.Register(h.a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	if _, err := tel.Register(h.a); err == nil {
		t.Error("a second Register succeeded")
	}
	adapter.Live(h.a, "items_show", "One item.", func(ctx context.Context, args showArgs) (string, error) {
		adapter.Reads(ctx, fmt.Sprintf("items/%d", args.ID))
		if name, ok := h.store.get(args.ID); ok {
			return name, nil
		}
		return "", adapter.ErrNotFound
	})
	return h
}

// collect returns the metrics collected now, by name.
func (h *harness) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// value returns the value of metric name with the given attributes
// (command=…, outcome=…), or -1 when there is no such point.
func value(t *testing.T, ms map[string]metricdata.Metrics, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	want := attribute.NewSet(attrs...)
	switch d := ms[name].Data.(type) {
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
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return int64(p.Count)
			}
		}
	case nil:
		t.Errorf("no metric %s", name)
	default:
		t.Errorf("metric %s is a %T", name, d)
	}
	return -1
}

func cmdAttrs(command string, outcome adapter.Outcome) []attribute.KeyValue {
	if outcome == "" {
		return []attribute.KeyValue{attribute.String("command", command)}
	}
	return []attribute.KeyValue{attribute.String("command", command), attribute.String("outcome", string(outcome))}
}

func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func childrenOf(spans []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, s := range spans {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() && s.Parent().IsValid() {
			names = append(names, s.Name())
		}
	}
	return names
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestTelemetry subscribes, reads, writes with a span of its own, and
// checks what the metrics count and how the spans hang together: the
// re-run is a child of the write and linked to it, the notification batch
// a child of the re-run, each read has its phases.
func TestTelemetry(t *testing.T) {
	h := newHarness(t, sdktrace.AlwaysSample(), nil)
	c := adaptertest.New(t, h.a)
	sub, err := c.Listen("app://items_show/1", "app://items_show/x")
	if err != nil || len(sub.Acknowledged) != 1 {
		t.Fatalf("listen: %v, %+v", err, sub)
	}
	for _, uri := range []string{"app://items_show/1", "app://items_show/0", "app://items_show/2"} {
		c.Read(uri)
	}

	ctx, write := h.tracer.Start(context.Background(), "write")
	h.store.set(1, "Ada King")
	h.a.ChangedContext(ctx, "items/1")
	write.End()
	c.WaitIdle()
	if got := sub.Take(); !slices.Equal(got, []string{"app://items_show/1"}) {
		t.Fatalf("notified %q", got)
	}

	ms := h.collect(t)
	for _, tc := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"mcplive.reads", cmdAttrs("items_show", adapter.OutcomeOK), 1},
		{"mcplive.reads", cmdAttrs("items_show", adapter.OutcomeInvalid), 1},
		{"mcplive.reads", cmdAttrs("items_show", adapter.OutcomeNotFound), 1},
		{"mcplive.reruns", cmdAttrs("items_show", adapter.OutcomeChanged), 1},
		{"mcplive.rerun.duration", cmdAttrs("items_show", ""), 1},
		{"mcplive.subscriptions", nil, 1},
		{"mcplive.live_queries", nil, 1},
		{"mcplive.pending_notifications", nil, 0},
		{"mcplive.notifications", nil, 1},
		{"mcplive.coalesced_changes", nil, 0},
		{"mcplive.refused_subscriptions", nil, 1},
		// The read of the URI listened to was answered from its query's
		// kept result; the other two reads ran (one failed the schema
		// first), as did the listen's first run and the re-run.
		{"mcplive.kept_answers", nil, 1},
		{"mcplive.kept_results", nil, 1},
		{"mcplive.kept_results.size", nil, int64(h.a.LiveStats().KeptBytes)},
		{"mcplive.command_runs", runAttrs("items_show", "subscribe"), 1},
		{"mcplive.command_runs", runAttrs("items_show", "read"), 1},
		{"mcplive.command_runs", runAttrs("items_show", "rerun"), 1},
		{"mcplive.foreign_session_requests", nil, 0},
	} {
		if got := value(t, ms, tc.name, tc.attrs...); got != tc.want {
			t.Errorf("%s%v = %d, want %d", tc.name, tc.attrs, got, tc.want)
		}
	}

	spans := h.spans.Ended()
	reads := spansNamed(spans, "read items_show")
	if len(reads) != 3 {
		t.Fatalf("%d read spans, want 3", len(reads))
	}
	wantPhases := [][]string{
		{"parse", "convert", "validate", "kept"}, // listened to: its kept result answered
		{"parse", "convert", "validate"},         // id 0 fails the schema
		{"parse", "convert", "validate", "command"},
	}
	for i, r := range reads {
		var got []string
		for _, kv := range r.Attributes() {
			k := string(kv.Key)
			if name, ok := strings.CutPrefix(k, "mcplive.phase."); ok {
				got = append(got, strings.TrimSuffix(name, ".duration"))
				if d := kv.Value.AsFloat64(); d < 0 || d > 10 {
					t.Errorf("read %d: %s = %v s", i, k, d)
				}
			}
		}
		if !slices.Equal(got, wantPhases[i]) {
			t.Errorf("read %d: phases %q, want %q", i, got, wantPhases[i])
		}
		if kids := childrenOf(spans, r); len(kids) != 0 {
			t.Errorf("read %d has child spans %q; phases are attributes without WithPhaseSpans", i, kids)
		}
		if attr(r, "mcp.resource.uri").Type() != attribute.INVALID {
			t.Error("a read's URI was recorded without WithResourceURIs")
		}
	}
	if got := attr(reads[1], "mcplive.outcome").AsString(); got != "invalid" {
		t.Errorf("outcome %q", got)
	}

	reruns := spansNamed(spans, "rerun items_show")
	if len(reruns) != 1 {
		t.Fatalf("%d re-run spans, want 1", len(reruns))
	}
	rr := reruns[0]
	if rr.Parent().SpanID() != write.SpanContext().SpanID() || rr.SpanContext().TraceID() != write.SpanContext().TraceID() {
		t.Errorf("the re-run's parent is %v, want the write %v", rr.Parent(), write.SpanContext())
	}
	if links := rr.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != write.SpanContext().SpanID() {
		t.Errorf("re-run links %+v, want the write", links)
	}
	if got := attr(rr, "mcplive.keys").AsStringSlice(); !slices.Equal(got, []string{"items/1"}) {
		t.Errorf("re-run keys %q", got)
	}
	if got := childrenOf(spans, rr); !slices.Equal(got, []string{"notify items_show"}) {
		t.Errorf("the re-run's children %q, want the notification batch", got)
	}
	notify := spansNamed(spans, "notify items_show")[0]
	if n := attr(notify, "mcplive.subscribers").AsInt64(); n != 1 {
		t.Errorf("notified %d", n)
	}
}

// runAttrs are the attributes of mcplive.command_runs.
func runAttrs(command, cause string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("command", command), attribute.String("cause", cause)}
}

// TestTelemetryRateLimited counts refused calls and reads, per command.
func TestTelemetryRateLimited(t *testing.T) {
	h := newHarness(t, sdktrace.AlwaysSample(), nil, adapter.WithRateLimit(rate.Every(time.Hour), 1))
	c := adaptertest.New(t, h.a)
	for range 2 {
		if _, err := c.CallTool("items_show", map[string]any{"id": 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Read("app://items_show/1"); err == nil {
		t.Fatal("a read past the rate limit succeeded")
	}
	ms := h.collect(t)
	for _, tc := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"mcplive.calls", cmdAttrs("items_show", adapter.OutcomeOK), 1},
		{"mcplive.calls", cmdAttrs("items_show", adapter.OutcomeRateLimited), 1},
		{"mcplive.reads", cmdAttrs("items_show", adapter.OutcomeRateLimited), 1},
		{"mcplive.rate_limited", cmdAttrs("items_show", ""), 2},
	} {
		if got := value(t, ms, tc.name, tc.attrs...); got != tc.want {
			t.Errorf("%s%v = %d, want %d", tc.name, tc.attrs, got, tc.want)
		}
	}
}

// TestTelemetryUnsampled: a read that is not sampled makes no span, not
// even of its phases, and is counted all the same.
func TestTelemetryUnsampled(t *testing.T) {
	h := newHarness(t, sdktrace.NeverSample(), nil)
	c := adaptertest.New(t, h.a)
	if _, err := c.Read("app://items_show/1"); err != nil {
		t.Fatal(err)
	}
	if spans := h.spans.Ended(); len(spans) != 0 {
		t.Errorf("%d spans recorded", len(spans))
	}
	if got := value(t, h.collect(t), "mcplive.reads", cmdAttrs("items_show", adapter.OutcomeOK)...); got != 1 {
		t.Errorf("reads %d", got)
	}
}

// TestTelemetryPhaseSpans: with WithPhaseSpans each phase of a read is a
// child span of the read, in order, and the URI is recorded with
// WithResourceURIs.
func TestTelemetryPhaseSpans(t *testing.T) {
	h := newHarness(t, sdktrace.AlwaysSample(), []otel.Option{otel.WithPhaseSpans(), otel.WithResourceURIs()})
	c := adaptertest.New(t, h.a)
	for _, uri := range []string{"app://items_show/1", "app://items_show/x", "app://items_show/1/2"} {
		c.Read(uri)
	}
	spans := h.spans.Ended()
	reads := spansNamed(spans, "read items_show")
	if len(reads) != 3 {
		t.Fatalf("%d read spans, want 3", len(reads))
	}
	for i, want := range [][]string{
		{"parse", "convert", "validate", "command"},
		{"parse", "convert"}, // x is no integer
		{"parse"},            // two segments where the template has one
	} {
		if got := childrenOf(spans, reads[i]); !slices.Equal(got, want) {
			t.Errorf("read %d: phase spans %q, want %q", i, got, want)
		}
	}
	if got := attr(reads[1], "mcp.resource.uri").AsString(); got != "app://items_show/x" {
		t.Errorf("URI %q", got)
	}
}

// TestTelemetryUntracedReruns: a change without a traced write re-runs
// and notifies as ever, counted, but traced only with WithRootRerunSpans,
// and then as the root of its own trace.
func TestTelemetryUntracedReruns(t *testing.T) {
	for _, root := range []bool{false, true} {
		t.Run(fmt.Sprintf("root=%v", root), func(t *testing.T) {
			var opts []otel.Option
			if root {
				opts = append(opts, otel.WithRootRerunSpans())
			}
			h := newHarness(t, sdktrace.AlwaysSample(), opts)
			c := adaptertest.New(t, h.a)
			sub, err := c.Listen("app://items_show/1")
			if err != nil || len(sub.Acknowledged) != 1 {
				t.Fatalf("listen: %v", err)
			}
			h.store.set(1, "Ada King")
			h.a.Changed("items/1")
			c.WaitIdle()
			if got := sub.Take(); len(got) != 1 {
				t.Fatalf("notified %q", got)
			}
			if got := value(t, h.collect(t), "mcplive.reruns", cmdAttrs("items_show", adapter.OutcomeChanged)...); got != 1 {
				t.Errorf("reruns %d, want 1", got)
			}
			spans := h.spans.Ended()
			reruns, notifies := spansNamed(spans, "rerun items_show"), spansNamed(spans, "notify items_show")
			if !root {
				if len(reruns)+len(notifies) != 0 {
					t.Errorf("%d re-run and %d batch spans without a traced write", len(reruns), len(notifies))
				}
				return
			}
			if len(reruns) != 1 || reruns[0].Parent().IsValid() || len(reruns[0].Links()) != 0 {
				t.Fatalf("re-run spans %v, want one root", reruns)
			}
			if len(notifies) != 1 || notifies[0].Parent().SpanID() != reruns[0].SpanContext().SpanID() {
				t.Errorf("the batch is not a child of its re-run")
			}
		})
	}
}

func TestNewRefusesNilProviders(t *testing.T) {
	if _, err := otel.New(otel.WithMeterProvider(nil)); err == nil {
		t.Error("nil MeterProvider accepted")
	}
	if _, err := otel.New(otel.WithTracerProvider(nil)); err == nil {
		t.Error("nil TracerProvider accepted")
	}
}

// TestTelemetryBatchedReruns: a batched re-run (adapter.WithBatch) of n
// argument sets counts n re-runs, as LiveStats does and as n re-runs one
// by one would, not one.
func TestTelemetryBatchedReruns(t *testing.T) {
	const n = 6
	h := newHarness(t, sdktrace.NeverSample(), nil, adapter.WithSubscriptionCap(100), adapter.WithClientSubscriptionCap(100))
	for id := 2; id <= n; id++ {
		h.store.set(id, "v1")
	}
	adapter.Live(h.a, "items_many", "One item, batched.", func(ctx context.Context, args showArgs) (string, error) {
		adapter.Reads(ctx, "items")
		name, _ := h.store.get(args.ID)
		return name, nil
	}, adapter.WithBatch(func(ctx context.Context, args []showArgs) ([]string, error) {
		adapter.Reads(ctx, "items")
		out := make([]string, len(args))
		for i, a := range args {
			out[i], _ = h.store.get(a.ID)
		}
		return out, nil
	}))
	reruns := listenAndChange(t, h, "items_many", n)
	if reruns != n {
		t.Fatalf("LiveStats: %d re-runs, want %d", reruns, n)
	}
	ms := h.collect(t)
	var counted int64
	for _, o := range []adapter.Outcome{adapter.OutcomeChanged, adapter.OutcomeUnchanged} {
		if v := value(t, ms, "mcplive.reruns", cmdAttrs("items_many", o)...); v > 0 {
			counted += v
		}
	}
	if counted != n {
		t.Errorf("mcplive.reruns counted %d re-runs of items_many, want %d (LiveStats.Reruns)", counted, n)
	}
}

// TestTelemetryPhasesBounded: a read's span keeps a bounded number of
// phases, and any further phase (one the adapter may add) is dropped
// rather than making End panic.
func TestTelemetryPhasesBounded(t *testing.T) {
	for _, phases := range []int{0, 4, 5, 8} {
		t.Run(fmt.Sprint(phases), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tel, err := otel.New(otel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			_, o := tel.Observe(context.Background(), adapter.Op{Kind: adapter.OpRead, Command: "c", Start: now})
			for i := range phases {
				o.Phase(fmt.Sprintf("p%d", i), now, now.Add(time.Millisecond))
			}
			o.End(adapter.OutcomeOK, nil)
			spans := spansNamed(rec.Ended(), "read c")
			if len(spans) != 1 || attr(spans[0], "mcplive.outcome").AsString() != "ok" {
				t.Fatalf("spans %v, want one read with its outcome", spans)
			}
		})
	}
}

// listenAndChange listens to app://<command>/1 … /n, reports a change of
// "items", waits until the re-runs are done, and returns how many re-runs
// LiveStats counted.
func listenAndChange(t *testing.T, h *harness, command string, n int) uint64 {
	t.Helper()
	c := adaptertest.New(t, h.a)
	var uris []string
	for id := 1; id <= n; id++ {
		uris = append(uris, fmt.Sprintf("app://%s/%d", command, id))
	}
	if sub, err := c.Listen(uris...); err != nil || len(sub.Acknowledged) != n {
		t.Fatalf("listen: %v, %+v", err, sub)
	}
	before := h.a.LiveStats().Reruns
	h.a.Changed("items")
	c.WaitIdle()
	return h.a.LiveStats().Reruns - before
}
