package adapter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// Changes that arrive while a query re-runs, to keys its run reads but the
// query is not filed under yet: each must be followed by a run that sees
// it (Changed: "A query that is running when its data changes runs once
// more after that run, so no change is missed").

type kArgs struct {
	K string `json:"k"`
}

// A change reported while a query re-runs, to a key that run reads but the
// query was not filed under, must be followed by a run that sees it, also
// when a second subscription to the same query, made meanwhile, refiled
// the query under the run's new read set. Otherwise the query keeps the
// stale result of the run as its state, and the next change that brings
// the data back to that stale value notifies no one, though the
// subscribers last read something else.
func TestChangeDuringRerunWhileASharedSubscriptionRefiles(t *testing.T) {
	var mu sync.Mutex
	data := map[string]string{"ptr": "a", "a": "1", "b": "1"}
	get := func(k string) string { mu.Lock(); defer mu.Unlock(); return data[k] }
	set := func(k, v string) { mu.Lock(); defer mu.Unlock(); data[k] = v }

	var armed atomic.Bool
	reached := make(chan struct{}, 1)
	gate := make(chan struct{})
	var liveRuns atomic.Int32

	a := Wrap(server.NewMCPServer("t", "1"))
	Live(a, "follow", "", func(ctx context.Context, args kArgs) (string, error) {
		Reads(ctx, "ptr")
		target := get("ptr")
		Reads(ctx, target)
		v := get(target)
		if middleware.OriginFrom(ctx) == middleware.Live {
			liveRuns.Add(1)
			if armed.CompareAndSwap(true, false) {
				reached <- struct{}{}
				<-gate
			}
		}
		return v, nil
	})
	const uri = "app://follow/x"
	c1 := newFakeClient(t, a, "s1", 64)
	if err := c1.subscribe(uri); err != nil {
		t.Fatalf("subscribe: %+v", err)
	}

	// The re-run R reads {ptr, b} and b == "1", and waits.
	armed.Store(true)
	set("ptr", "b")
	a.Changed("ptr")
	<-reached
	// b changes while R runs; the query is still filed under {a, ptr}.
	set("b", "2")
	a.Changed("b")
	// A second session subscribes to the same query: its first run starts
	// after the change, sees b == "2", and refiles the query under
	// {b, ptr}, R's read set.
	c2 := newFakeClient(t, a, "s2", 64)
	if err := c2.subscribe(uri); err != nil {
		t.Fatalf("second subscribe: %+v", err)
	}
	close(gate) // R returns "1", which predates the change of b
	waitIdle(t, a)
	runsAfterR := liveRuns.Load() - 1
	c1.take()
	c2.take()

	// Both subscribers have now seen "2" (c1 was notified of the first
	// run of c2, and c2 ran it). b goes back to "1": a change of what they
	// read.
	set("b", "1")
	a.Changed("b")
	waitIdle(t, a)
	if len(c1.take()) == 0 || len(c2.take()) == 0 {
		t.Fatalf("b went from 2 to 1 and a subscriber heard nothing: the change of b during the re-run was never re-run (live re-runs after R, before this change: %d; want 1)", runsAfterR)
	}
}

// "A query that is running when its data changes runs once more after that
// run, so no change is missed" (Changed). That holds for a run that
// outlives its deadline too: it read b, b changed while it ran, so the
// query must run once more. The late run is discarded and the query stays
// filed under its old read set, which does not have b: the change of b is
// lost, and the subscriber is never told that its result went from 1 to 3.
func TestChangeDuringALateRerun(t *testing.T) {
	var mu sync.Mutex
	data := map[string]string{"ptr": "a", "a": "1", "b": "2"}
	get := func(k string) string { mu.Lock(); defer mu.Unlock(); return data[k] }
	set := func(k, v string) { mu.Lock(); defer mu.Unlock(); data[k] = v }

	var armed atomic.Bool
	reached := make(chan struct{}, 1)
	gate := make(chan struct{})
	a := Wrap(server.NewMCPServer("t", "1"), WithRerunTimeout(50*time.Millisecond))
	Live(a, "follow", "", func(ctx context.Context, args kArgs) (string, error) {
		Reads(ctx, "ptr")
		target := get("ptr")
		Reads(ctx, target)
		v := get(target)
		if middleware.OriginFrom(ctx) == middleware.Live && armed.CompareAndSwap(true, false) {
			reached <- struct{}{}
			<-gate
			<-ctx.Done() // outlive the deadline
		}
		return v, nil
	})
	const uri = "app://follow/x"
	c := newFakeClient(t, a, "s1", 64)
	if err := c.subscribe(uri); err != nil { // "1", read set {a, ptr}
		t.Fatalf("subscribe: %+v", err)
	}

	armed.Store(true)
	set("ptr", "b")
	a.Changed("ptr")
	<-reached // R has read {ptr, b} and b == "2"
	set("b", "3")
	a.Changed("b") // the data R reads changed while it runs
	close(gate)    // R outlives its deadline
	waitIdle(t, a)
	if late := a.LiveStats().Late; late != 1 {
		t.Fatalf("Late %d, want 1", late)
	}
	if got := c.take(); len(got) == 0 {
		t.Fatalf("no notification, though the subscription's result went from 1 to %s and the change of b came while the query ran; stats %+v", get("b"), a.LiveStats())
	}
}
