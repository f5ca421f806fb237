package adapter_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcplive/adapter"
)

// rerunEnds records how each observed re-run ended.
type rerunEnds struct {
	mu   sync.Mutex
	ends []rerunEnd
}

type rerunEnd struct {
	count   int
	outcome adapter.Outcome
	err     error
}

func (r *rerunEnds) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	if op.Kind != adapter.OpRerun {
		return ctx, nil
	}
	return ctx, &rerunEndObservation{r: r, count: op.Count}
}

type rerunEndObservation struct {
	r     *rerunEnds
	count int
}

func (*rerunEndObservation) Phase(string, time.Time, time.Time) {}

func (o *rerunEndObservation) End(outcome adapter.Outcome, err error) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.r.ends = append(o.r.ends, rerunEnd{o.count, outcome, err})
}

// TestBatchFallbackObserved: an Observer can tell the call of a batch
// that failed as a whole (ErrBatchFailed), which LiveStats does not count
// as re-runs, from the runs of its argument sets one by one, which it
// does.
func TestBatchFallbackObserved(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(4)
	a, _ := batchApp(t, st, 4, adapter.WithObserver(obs))
	st.setMode(batchFails)
	a.Changed("items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var failed, solo int
	for _, e := range obs.ends {
		switch {
		case errors.Is(e.err, adapter.ErrBatchFailed):
			if e.count != 4 || e.outcome != adapter.OutcomeInternal {
				t.Errorf("failed batch ended %+v, want 4 sets, internal", e)
			}
			failed++
		case e.count == 0:
			solo++
		}
	}
	if failed != 1 || solo != 4 {
		t.Errorf("re-runs ended %+v: want one failed batch and 4 runs alone", obs.ends)
	}
}
