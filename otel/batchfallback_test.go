package otel_test

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcplive/adapter"
)

// TestTelemetryBatchFallback: a batched re-run that fails as a whole
// re-runs its argument sets one by one. LiveStats counts those runs, not
// the failed call; mcplive.reruns, which the docs say counts as LiveStats
// does, must not count each argument set twice: the runs, as LiveStats,
// and the failed call as one internal re-run.
func TestTelemetryBatchFallback(t *testing.T) {
	const n = 4
	h := newHarness(t, sdktrace.NeverSample(), nil, adapter.WithSubscriptionCap(100), adapter.WithClientSubscriptionCap(100))
	adapter.Live(h.a, "items_broken", "One item; its batch form fails.", func(ctx context.Context, args showArgs) (string, error) {
		adapter.Reads(ctx, "items")
		return "x", nil
	}, adapter.WithBatch(func(ctx context.Context, args []showArgs) ([]string, error) {
		adapter.Reads(ctx, "items")
		return nil, errors.New("the batch form is broken")
	}))
	reruns := listenAndChange(t, h, "items_broken", n)
	ms := h.collect(t)
	var counted int64
	for _, o := range []adapter.Outcome{adapter.OutcomeChanged, adapter.OutcomeUnchanged, adapter.OutcomeInternal} {
		if v := value(t, ms, "mcplive.reruns", cmdAttrs("items_broken", o)...); v > 0 {
			counted += v
		}
	}
	internal := value(t, ms, "mcplive.reruns", cmdAttrs("items_broken", adapter.OutcomeInternal)...)
	if reruns != n || counted != n+1 || internal != 1 {
		t.Errorf("mcplive.reruns counted %d re-runs of items_broken (%d internal), LiveStats %d; want %d and the failed call", counted, internal, reruns, n)
	}
}
