package adapter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// A runContext behaves as context.WithTimeout would, whether or not anyone
// asked for Done before its end.
func TestRunContextDeadline(t *testing.T) {
	t.Run("without Done", func(t *testing.T) {
		rc := newRunContext(context.Background(), 1, new(readRecorder))
		rc.begin(time.Now(), time.Millisecond)
		if err := rc.Err(); err != nil {
			t.Fatalf("Err before the deadline: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
		if !errors.Is(rc.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline: %v", rc.Err())
		}
		select {
		case <-rc.Done(): // made now, closed at once
		default:
			t.Fatal("Done after the deadline is open")
		}
		if _, err := rc.end(); err != context.DeadlineExceeded {
			t.Fatalf("end: %v", err)
		}
	})
	t.Run("with Done", func(t *testing.T) {
		rc := newRunContext(context.Background(), 1, new(readRecorder))
		rc.begin(time.Now(), 5*time.Millisecond)
		if d, ok := rc.Deadline(); !ok || time.Until(d) > 5*time.Millisecond {
			t.Fatalf("Deadline %v, %v", d, ok)
		}
		select {
		case <-rc.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done never closed")
		}
		if _, err := rc.end(); err != context.DeadlineExceeded {
			t.Fatalf("end: %v", err)
		}
	})
}

// A runContext cancelled (its queries dropped, or Close) ends, and so do
// the contexts derived from it.
func TestRunContextCancel(t *testing.T) {
	t.Run("before Done", func(t *testing.T) {
		rc := newRunContext(context.Background(), 1, new(readRecorder))
		rc.begin(time.Now(), time.Hour)
		rc.cancel()
		if !errors.Is(rc.Err(), context.Canceled) {
			t.Fatalf("Err %v", rc.Err())
		}
		<-rc.Done()
		if _, err := rc.end(); err != context.Canceled {
			t.Fatalf("end: %v", err)
		}
	})
	t.Run("a derived context ends with it", func(t *testing.T) {
		rc := newRunContext(context.Background(), 1, new(readRecorder))
		rc.begin(time.Now(), time.Hour)
		child, stop := context.WithCancel(context.WithValue(rc, struct{}{}, 1))
		defer stop()
		rc.cancel()
		select {
		case <-child.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the derived context did not end")
		}
		if !errors.Is(child.Err(), context.Canceled) {
			t.Fatalf("derived Err %v", child.Err())
		}
	})
}

// A runContext carries the registry's values and the run's read recorder.
func TestRunContextValues(t *testing.T) {
	t.Run("origin", func(t *testing.T) {
		rc := newRunContext(middleware.WithOrigin(context.Background(), middleware.Live), 1, new(readRecorder))
		rc.begin(time.Now(), time.Hour)
		if middleware.OriginFrom(rc) != middleware.Live {
			t.Fatal("no origin before Done")
		}
		_ = rc.Done() // makes the inner context
		if middleware.OriginFrom(rc) != middleware.Live {
			t.Fatal("no origin after Done")
		}
	})
	t.Run("reads", func(t *testing.T) {
		rc := newRunContext(context.Background(), 1, new(readRecorder))
		rc.begin(time.Now(), time.Hour)
		Reads(rc, "b", "a")
		ReadsAt(rc, 3, "c") // not a batch: the run's
		rc.rec.close()
		Reads(rc, "late")
		if got := rc.rec.readSet(-1, []string{"s"}, nil); len(got) != 4 || got[0] != "a" || got[3] != "s" {
			t.Fatalf("read set %v", got)
		}
	})
}

// A batch's read sets are each argument set's own keys with the batch's
// shared ones; a read set equal to the previous one is that one, not a
// copy.
func TestBatchReadSet(t *testing.T) {
	rc := newRunContext(context.Background(), 3, new(readRecorder))
	rc.rec.forBatch(3)
	Reads(rc, "shared")
	ReadsAt(rc, 0, "items/1")
	ReadsAt(rc, 2, "items/3", "items/3")
	ReadsAt(rc, 7, "everyone") // out of range: every set's
	rc.rec.close()
	prev := []string{"everyone", "items/1", "shared", "static"}
	first := rc.rec.readSet(0, []string{"static"}, prev)
	if &first[0] != &prev[0] {
		t.Errorf("read set %v equal to the previous one was copied", first)
	}
	if got := rc.rec.readSet(1, nil, nil); len(got) != 2 || got[0] != "everyone" || got[1] != "shared" {
		t.Errorf("set 1 read %v", got)
	}
	got := rc.rec.readSet(2, nil, prev)
	if len(got) != 3 || got[1] != "items/3" {
		t.Errorf("set 2 read %v", got)
	}
}

// A worker's recorder serves its runs one after another: a context a
// command kept records nothing into the runs after its own, and stays
// ended.
func TestRunContextKeptAfterItsRun(t *testing.T) {
	rec := new(readRecorder)
	first := newRunContext(context.Background(), 1, rec)
	first.begin(time.Now(), time.Hour)
	Reads(first, "customers/1")
	rec.close()
	first.end()
	if got := rec.readSet(-1, nil, nil); len(got) != 1 || got[0] != "customers/1" {
		t.Fatalf("first run read %v", got)
	}

	second := newRunContext(context.Background(), 1, rec)
	second.begin(time.Now(), time.Hour)
	Reads(first, "late")       // the kept context of the first run
	ReadsAt(first, 0, "later") // as a batch would
	Reads(second, "customers/2")
	rec.close()
	if got := rec.readSet(-1, nil, nil); len(got) != 1 || got[0] != "customers/2" {
		t.Errorf("second run read %v, want only customers/2", got)
	}
	if !errors.Is(first.Err(), context.Canceled) {
		t.Errorf("kept context's Err %v, want Canceled", first.Err())
	}
	select {
	case <-first.Done():
	default:
		t.Error("kept context's Done is open")
	}
	if d1, _ := first.Deadline(); d1.IsZero() {
		t.Error("kept context lost its deadline")
	}
}

// Once Err has said the deadline passed, it keeps saying so, and so does
// end, as a context of package context would.
func TestRunContextDeadlineSticks(t *testing.T) {
	rc := newRunContext(context.Background(), 1, new(readRecorder))
	rc.begin(time.Now().Add(-time.Second), time.Millisecond) // already past
	if err := rc.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err %v", err)
	}
	if _, err := rc.end(); err != context.DeadlineExceeded {
		t.Fatalf("end %v", err)
	}
	if err := rc.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err after end %v, want DeadlineExceeded still", err)
	}
}

// A runContext is made for every re-run: it stays within 176 bytes, the
// size class it was cut to (runcontext.go); and an outbox slot, one for
// every subscription a connection holds, within 16 (its notification is
// kept beside the others', in conn.notes).
func TestRunContextAndOutSlotSizes(t *testing.T) {
	if n := unsafe.Sizeof(runContext{}); n > 176 {
		t.Errorf("runContext is %d bytes, want at most 176", n)
	}
	if n := unsafe.Sizeof(outSlot{}); n > 16 {
		t.Errorf("outSlot is %d bytes, want at most 16", n)
	}
}

// A context a command keeps after its re-run returned is cancelled: Err
// says Canceled. Once Err returned an error, every later call must return
// the same one (context.Context), whatever the clock does and whether or
// not someone asks for Done after the deadline has passed.
func TestRerunContextKeptErrIsStable(t *testing.T) {
	const timeout = 30 * time.Millisecond
	kept := make(chan context.Context, 1)
	var n atomic.Int32
	a := Wrap(server.NewMCPServer("t", "1"), WithRerunTimeout(timeout))
	Live(a, "keep", "", func(ctx context.Context, args kArgs) (int32, error) {
		Reads(ctx, "k")
		if middleware.OriginFrom(ctx) == middleware.Live {
			select {
			case kept <- ctx:
			default:
			}
		}
		return n.Add(1), nil
	})
	c := newFakeClient(t, a, "s1", 64)
	if err := c.subscribe("app://keep/x"); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}
	a.Changed("k")
	waitIdle(t, a)
	ctx := <-kept // the re-run has returned

	first := ctx.Err()
	if first != context.Canceled {
		t.Fatalf("kept context's Err after its run returned: %v, want context.Canceled", first)
	}
	d, ok := ctx.Deadline()
	if !ok {
		t.Fatal("no deadline")
	}
	// Let the deadline pass (what is under test is the clock), then ask
	// for Done, as a goroutine the command left selecting on it would.
	<-time.After(time.Until(d) + time.Millisecond)
	<-ctx.Done()
	if got := ctx.Err(); got != first {
		t.Fatalf("kept context's Err was %v, then %v once Done was asked for after the deadline: successive Err calls must return the same error", first, got)
	}
}

// The runs of a chunk (a worker takes several queries of a command at
// once, their contexts made together) each have a context of their own:
// live while its run runs, cancelled once the round is over.
func TestRerunChunkContextsAreTheirOwn(t *testing.T) {
	const queries = 48 // enough waiting that workers take chunks
	var (
		mu   sync.Mutex
		kept []context.Context
		errs []string
	)
	a := Wrap(server.NewMCPServer("t", "1"))
	Live(a, "keep", "", func(ctx context.Context, args kArgs) (string, error) {
		Reads(ctx, "k")
		if middleware.OriginFrom(ctx) != middleware.Live {
			return args.K, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Sprintf("run %d: own context ended: %v", len(kept), err))
		}
		for i, k := range kept {
			if k == ctx {
				errs = append(errs, fmt.Sprintf("run %d has run %d's context", len(kept), i))
			}
		}
		kept = append(kept, ctx)
		return args.K + "!", nil
	})
	c := newFakeClient(t, a, "s1", 64)
	for i := range queries {
		if err := c.subscribe(fmt.Sprintf("app://keep/%d", i)); err != nil {
			t.Fatalf("subscribe: %+v", err)
		}
	}
	a.Changed("k")
	waitIdle(t, a)
	mu.Lock()
	defer mu.Unlock()
	if len(kept) != queries {
		t.Fatalf("%d re-runs, want %d", len(kept), queries)
	}
	for _, e := range errs {
		t.Error(e)
	}
	for i, k := range kept {
		if k.Err() != context.Canceled {
			t.Errorf("run %d's context after the round: %v", i, k.Err())
		}
	}
}

// end tells the time the run ended, which the next run of a chunk begins
// at: read on the monotonic clock against the deadline, it is between the
// clock's readings before and after.
func TestRunContextEndTellsTheTime(t *testing.T) {
	rc := newRunContext(context.Background(), 1, new(readRecorder))
	start := time.Now()
	rc.begin(start, time.Hour)
	before := time.Now()
	now, err := rc.end()
	after := time.Now()
	if err != nil {
		t.Fatalf("end: %v", err)
	}
	if now.Before(before) || now.After(after) {
		t.Fatalf("end said %v, not between %v and %v", now, before, after)
	}
	if d := now.Sub(start); d < 0 || d > after.Sub(start) {
		t.Fatalf("end said %v after the start, want between 0 and %v", d, after.Sub(start))
	}
}
