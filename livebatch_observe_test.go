package adapter_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// rerunEnds records how each observed re-run ended.
type rerunEnds struct {
	mu   sync.Mutex
	ends []rerunEnd
}

type rerunEnd struct {
	count   int
	keys    []string
	causes  []context.Context
	outcome adapter.Outcome
	err     error
}

func (r *rerunEnds) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	if op.Kind != adapter.OpRerun {
		return ctx, nil
	}
	return ctx, &rerunEndObservation{r: r, op: op}
}

type rerunEndObservation struct {
	r  *rerunEnds
	op adapter.Op
}

func (*rerunEndObservation) Phase(string, time.Time, time.Time) {}

func (o *rerunEndObservation) End(outcome adapter.Outcome, err error) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.r.ends = append(o.r.ends, rerunEnd{o.op.Count, o.op.Keys, o.op.Causes, outcome, err})
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

type writeKey struct{}

// TestBatchFallbackKeepsCauses: the runs alone that follow a batch that
// failed as a whole are what notifies the subscribers, so they carry the
// change that caused them, as the failed call did: else a tracing
// Observer loses the link from the write to the notifications it caused.
func TestBatchFallbackKeepsCauses(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(3)
	a, _ := batchApp(t, st, 3, adapter.WithObserver(obs))
	st.setMode(batchFails)
	a.ChangedContext(context.WithValue(context.Background(), writeKey{}, "the write"), "items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 4 {
		t.Fatalf("re-runs ended %+v: want one failed batch and 3 runs alone", obs.ends)
	}
	for _, e := range obs.ends {
		if e.count != 0 {
			continue // the failed call's
		}
		if !slices.Equal(e.keys, []string{"items"}) || len(e.causes) != 1 || e.causes[0].Value(writeKey{}) != "the write" {
			t.Errorf("run alone caused by keys %q and %d contexts, want items and the write", e.keys, len(e.causes))
		}
	}
}

// TestBatchCausesOnce: a write that reaches every argument set of a batch
// is one cause of the batch, not one per set: a tracing Observer links the
// re-run to each cause, and repeats would crowd out the other writes
// within MaxCauses.
func TestBatchCausesOnce(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(3)
	a, _ := batchApp(t, st, 3, adapter.WithObserver(obs))
	a.ChangedContext(context.WithValue(context.Background(), writeKey{}, "the write"), "items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 1 || obs.ends[0].count != 3 {
		t.Fatalf("re-runs ended %+v: want one batch of 3", obs.ends)
	}
	if e := obs.ends[0]; len(e.causes) != 1 || e.causes[0].Value(writeKey{}) != "the write" {
		t.Errorf("the batch has %d causes, want the write once", len(e.causes))
	}
}

// uncomparableCtx is a context whose values == cannot compare.
type uncomparableCtx struct {
	context.Context
	tags []string
}

// TestBatchCausesUncomparableContext: telling causes apart compares
// contexts, which must not panic, on a worker, for a context of the
// user's that cannot be compared.
func TestBatchCausesUncomparableContext(t *testing.T) {
	obs := &rerunEnds{}
	st := newBatchStore(3)
	a, _ := batchApp(t, st, 3, adapter.WithObserver(obs))
	a.ChangedContext(uncomparableCtx{context.Background(), []string{"a"}}, "items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 1 || obs.ends[0].count != 3 || len(obs.ends[0].causes) == 0 {
		t.Fatalf("re-runs ended %+v: want one batch of 3, with its cause", obs.ends)
	}
}

// TestBatchInternalErrorObserved: a batch in which one set failed for a
// reason of the server's ends internal, with that error, wherever the set
// stood in the batch: a set that merely vanished (not found) before it
// must not hide it, as it would not for runs alone.
func TestBatchInternalErrorObserved(t *testing.T) {
	obs := &rerunEnds{}
	a := adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithObserver(obs))
	broken := errors.New("the shard is away")
	var failing atomic.Bool
	adapter.Live(a, "items_show", "One item.", func(ctx context.Context, args itemID) (namedItem, error) {
		adapter.Reads(ctx, "items")
		return namedItem{ID: args.ID}, nil
	}, adapter.WithBatch(func(ctx context.Context, args []itemID) ([]namedItem, error) {
		adapter.Reads(ctx, "items")
		out := make([]namedItem, len(args))
		errs := make(adapter.BatchErrors, len(args))
		for i, a := range args {
			out[i] = namedItem{ID: a.ID}
		}
		if failing.Load() {
			errs[0] = adapter.ErrNotFound // the agent's to see
			errs[len(args)-1] = broken    // the server's
		}
		return out, errs
	}))
	c := adaptertest.New(t, a)
	if sub, err := c.Listen("app://items_show/1", "app://items_show/2", "app://items_show/3"); err != nil || len(sub.Acknowledged) != 3 {
		t.Fatalf("listen: %v", err)
	}
	failing.Store(true)
	a.Changed("items")
	waitIdle(t, a)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ends) != 1 || obs.ends[0].count != 3 {
		t.Fatalf("re-runs ended %+v: want one batch of 3", obs.ends)
	}
	if e := obs.ends[0]; e.outcome != adapter.OutcomeInternal || !errors.Is(e.err, broken) {
		t.Errorf("the batch ended %q with %v, want internal with %v", e.outcome, e.err, broken)
	}
}
