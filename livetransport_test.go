package adapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// TestLiveTransports runs one watching scenario on every transport and
// both protocol eras: subscribe (shared query, two spellings, bad URIs),
// a write that changes the result, writes that do not, the 65th URI, and
// disconnects that leave nothing behind.
func TestLiveTransports(t *testing.T) {
	for _, tr := range liveTransports {
		for _, legacy := range []bool{false, true} {
			era := "modern"
			if legacy {
				era = "legacy"
			}
			t.Run(tr.name+"/"+era, func(t *testing.T) {
				defer leakcheck.VerifyNone(t, leakcheck.Current())
				liveScenario(t, tr, legacy)
			})
		}
	}
}

func liveScenario(t *testing.T, tr liveTransport, legacy bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := newItemStore(80)
	a := newLiveServer(t, st)

	const (
		u1  = "app://items_show/1"
		u1b = "app://items_show/%31" // the same arguments, spelled differently
	)
	bad := map[string]error{
		"app://nope/1":           mcp.ErrResourceNotFound, // no such command
		"app://items_show/abc":   mcp.ErrInvalidParams,    // does not convert
		"app://items_show/0":     mcp.ErrInvalidParams,    // fails Validate
		"app://items_show/1?x=1": mcp.ErrResourceNotFound, // a parameter the template lacks
	}
	uris := []string{u1, u1b}
	for u := range bad {
		uris = append(uris, u)
	}

	wa := tr.dial(t, a, legacy)
	acked, refused, subA := wa.subscribe(t, ctx, uris...)
	slices.Sort(acked)
	if want := []string{u1b, u1}; !slices.Equal(acked, want) {
		t.Fatalf("acknowledged %q, want %q", acked, want)
	}
	if legacy {
		for u, want := range bad {
			err := refused[u]
			if err == nil {
				t.Errorf("subscribe %s: no error", u)
				continue
			}
			// The in-process transport has no edge to rewrite errors:
			// mcp-go answers a failed initialization hook with -32600.
			if tr.name != "inprocess" && !errors.Is(err, want) {
				t.Errorf("subscribe %s: %v, want %v", u, err, want)
			}
		}
	}

	var wb *watcher
	subB := ""
	if tr.multi {
		wb = tr.dial(t, a, legacy)
		var ackedB []string
		ackedB, _, subB = wb.subscribe(t, ctx, u1)
		if !slices.Equal(ackedB, []string{u1}) {
			t.Fatalf("B acknowledged %q", ackedB)
		}
	}
	stats := a.LiveStats()
	wantSubs := 2
	if wb != nil {
		wantSubs = 3
	}
	if stats.Queries != 1 || stats.Subscriptions != wantSubs {
		t.Fatalf("stats %+v: want 1 shared query and %d subscriptions", stats, wantSubs)
	}

	// A write that changes the result: one notification per subscription,
	// each with its own URI.
	base := a.LiveStats()
	st.set(1, "v2")
	a.Changed("items/1")
	waitIdle(t, a)
	after := a.LiveStats()
	if got := after.Notified - base.Notified; got != uint64(wantSubs) {
		t.Fatalf("%d notifications sent, want %d", got, wantSubs)
	}
	if got := after.Reruns - base.Reruns; got != 1 {
		t.Fatalf("%d re-runs, want 1 shared re-run", got)
	}
	gotA := wa.expect(t, ctx, 2)
	uriA := []string{gotA[0].uri, gotA[1].uri}
	slices.Sort(uriA)
	if !slices.Equal(uriA, []string{u1b, u1}) {
		t.Fatalf("A heard %v", gotA)
	}
	for _, n := range gotA {
		if n.subID != subA {
			t.Fatalf("A: notification with subscription id %q, want %q", n.subID, subA)
		}
	}
	if wb != nil {
		gotB := wb.expect(t, ctx, 1)
		if gotB[0].uri != u1 || gotB[0].subID != subB {
			t.Fatalf("B heard %+v, want %s with subscription id %q", gotB, u1, subB)
		}
	}

	// Writes that do not change the result: re-runs, and no notification.
	base = a.LiveStats()
	st.set(1, "v2")
	a.Changed("items/1")
	waitIdle(t, a)
	a.Changed("items") // the whole table
	waitIdle(t, a)
	st.set(2, "v2") // a row no one watches: not even a re-run
	a.Changed("items/2")
	waitIdle(t, a)
	after = a.LiveStats()
	if after.Notified != base.Notified {
		t.Fatalf("%d notifications for unchanged results", after.Notified-base.Notified)
	}
	if got := after.Reruns - base.Reruns; got != 2 {
		t.Fatalf("%d re-runs, want 2", got)
	}
	wa.none(t)
	if wb != nil {
		wb.none(t)
		wb.shutdown()
	}

	// The cap: 64 subscriptions per connection, the 65th refused. On the
	// modern era a new listen replaces the old stream, so the connection
	// starts empty; on the legacy era it holds u1 and u1b already.
	if !legacy {
		// End the stream, and wait for the server to see it end: on stdio
		// the next stream shares the session, and so the cap.
		wa.unlisten()
		ctxW, cancelW := context.WithTimeout(ctx, 10*time.Second)
		if err := a.live.waitFor(ctxW, func() bool { return a.live.subs == 0 }); err != nil {
			t.Fatalf("subscriptions left after the stream ended: %+v", a.LiveStats())
		}
		cancelW()
	}
	var capURIs []string
	n := DefaultSubscriptionCap + 1
	if legacy {
		n -= 2
	}
	for i := range n {
		capURIs = append(capURIs, fmt.Sprintf("app://items_show/%d", 10+i))
	}
	acked, refused, _ = wa.subscribe(t, ctx, capURIs...)
	if !slices.Equal(acked, capURIs[:n-1]) {
		t.Fatalf("acknowledged %d of %d, want all but the last", len(acked), n)
	}
	if legacy {
		last := capURIs[n-1]
		if err := refused[last]; err == nil || tr.name != "inprocess" && !errors.Is(err, mcp.ErrInvalidRequest) {
			t.Fatalf("subscribe %s beyond the cap: %v", last, err)
		}
		// Unsubscribing frees a place.
		if err := wa.c.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: u1b}}); err != nil {
			t.Fatal(err)
		}
		if acked, _, _ := wa.subscribe(t, ctx, last); len(acked) != 1 {
			t.Fatalf("subscribe after unsubscribe refused")
		}
	}
	if got := a.LiveStats().Subscriptions; got != DefaultSubscriptionCap {
		t.Fatalf("%d subscriptions, want %d", got, DefaultSubscriptionCap)
	}

	// A write under the new subscriptions still arrives.
	st.set(10, "v2")
	a.Changed("items/10")
	waitIdle(t, a)
	if got := wa.expect(t, ctx, 1); got[0].uri != capURIs[0] {
		t.Fatalf("heard %+v, want %s", got, capURIs[0])
	}

	wa.shutdown()
	waitEmpty(t, a)
}
