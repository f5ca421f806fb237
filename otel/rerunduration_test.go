package otel_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// TestRerunDurationIsTheRun: mcplive.rerun.duration is how long each
// re-run took, not how long its worker took to get round to reporting it.
// A worker with many queries waiting runs a chunk of them one by one and
// applies them together: the first of a chunk of 16 must not be timed as
// sixteen runs.
func TestRerunDurationIsTheRun(t *testing.T) {
	// One P: four workers, so that 64 queued queries make chunks of 16.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n, sleep = 64, 5 * time.Millisecond
	h := newHarness(t, sdktrace.NeverSample(), nil, adapter.WithSubscriptionCap(1000), adapter.WithClientSubscriptionCap(1000))
	var mu sync.Mutex
	var longest time.Duration // the longest run, as the command saw it
	live := false
	adapter.Live(h.a, "items_slow", "One item, slowly.", func(ctx context.Context, args showArgs) (string, error) {
		adapter.Reads(ctx, "items")
		start := time.Now()
		mu.Lock()
		slow := live
		mu.Unlock()
		if slow {
			time.Sleep(sleep)
		}
		mu.Lock()
		longest = max(longest, time.Since(start))
		mu.Unlock()
		return "x", nil
	})
	c := adaptertest.New(t, h.a)
	var uris []string
	for id := 1; id <= n; id++ {
		uris = append(uris, fmt.Sprintf("app://items_slow/%d", id))
	}
	if sub, err := c.Listen(uris...); err != nil || len(sub.Acknowledged) != n {
		t.Fatalf("listen: %v, %+v", err, sub)
	}
	mu.Lock()
	live, longest = true, 0
	mu.Unlock()
	h.a.Changed("items")
	c.WaitIdle()

	ms := h.collect(t)
	d, ok := ms["mcplive.rerun.duration"].Data.(metricdata.Histogram[float64])
	if !ok || len(d.DataPoints) != 1 {
		t.Fatalf("mcplive.rerun.duration: %+v", ms["mcplive.rerun.duration"])
	}
	p := d.DataPoints[0]
	got, _ := p.Max.Value()
	mu.Lock()
	want := longest
	mu.Unlock()
	if p.Count != n {
		t.Errorf("%d durations, want %d", p.Count, n)
	}
	// The run plus the adapter's own work around it: well under twice.
	if limit := 2*want + 5*time.Millisecond; time.Duration(got*float64(time.Second)) > limit {
		t.Errorf("the longest re-run recorded %.1f ms; the longest run took %v (limit %v)", got*1e3, want, limit)
	}
}
