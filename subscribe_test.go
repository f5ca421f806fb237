package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
	"github.com/mcplive/adapter/middleware"
)

// TestClientSubscriptionCapAcrossListenStreams: on stateless 2026-07-28
// HTTP every listen stream is a connection with a cap of its own; the
// client cap, keyed by the client's address, bounds them together.
func TestClientSubscriptionCapAcrossListenStreams(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newLiveServer(t, newItemStore(400))
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	defer hs.Close()

	// One listen stream per client value (mcp-go's client keeps one
	// open), all from the same address: one client to the cap.
	const perStream = 60 // under the connection cap of 64
	listen := func(stream int) (acked int, c *client.Client) {
		tr, err := transport.NewStreamableHTTP(hs.URL)
		if err != nil {
			t.Fatal(err)
		}
		c = client.NewClient(tr)
		acks := make(chan []string, 1)
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
				b, _ := json.Marshal(n.Params.AdditionalFields["notifications"])
				var f mcp.SubscriptionFilter
				_ = json.Unmarshal(b, &f)
				acks <- f.ResourceSubscriptions
			}
		})
		initialize(t, c)
		uris := make([]string, perStream)
		for i := range uris {
			uris[i] = fmt.Sprintf("app://items_show/%d", stream*perStream+i+1)
		}
		if _, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: uris}, func(error) {}); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-acks:
			return len(got), c
		case <-ctx.Done():
			t.Fatal("no acknowledgement")
		}
		return 0, nil
	}
	var clients []*client.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	total := 0
	for stream := range 5 {
		n, c := listen(stream)
		clients = append(clients, c)
		total += n
		if want := min(perStream, DefaultClientSubscriptionCap-stream*perStream); n != want {
			t.Fatalf("stream %d: %d acknowledged, want %d", stream, n, want)
		}
	}
	if got := a.LiveStats().Subscriptions; got != DefaultClientSubscriptionCap || total != got {
		t.Fatalf("%d subscriptions held (%d acknowledged), want the client cap %d", got, total, DefaultClientSubscriptionCap)
	}
	// Ending a stream gives its places back.
	clients[0].Close()
	if err := a.live.waitFor(ctx, func() bool { return a.live.subs == DefaultClientSubscriptionCap-perStream }); err != nil {
		t.Fatalf("the ended stream's subscriptions are still held: %+v", a.LiveStats())
	}
	n, c := listen(6)
	clients = append(clients, c)
	if n != perStream {
		t.Fatalf("after a stream ended: %d acknowledged, want %d", n, perStream)
	}
	for _, c := range clients {
		c.Close()
	}
	waitEmpty(t, a)
}

// TestClientSubscriptionCapRefusesSubscribe: beyond the client cap a legacy
// resources/subscribe is refused, naming the cap; unsubscribing frees a
// place. The key function decides who shares a cap.
func TestClientSubscriptionCapRefusesSubscribe(t *testing.T) {
	a := newLiveServer(t, newItemStore(10),
		WithClientSubscriptionCap(3),
		WithClientKey(func(context.Context, *middleware.Call) string { return "everyone" }))
	fa := newFakeClient(t, a, "a", 8)
	fb := newFakeClient(t, a, "b", 8)
	for _, u := range []string{"app://items_show/1", "app://items_show/2"} {
		if err := fa.subscribe(u); err != nil {
			t.Fatalf("A %s: %+v", u, err)
		}
	}
	if err := fb.subscribe("app://items_show/3"); err != nil {
		t.Fatalf("B's first: %+v", err)
	}
	err := fb.subscribe("app://items_show/4")
	if err == nil || err.Code != mcp.INVALID_REQUEST || !strings.Contains(err.Message, "at most 3 subscriptions per client") {
		t.Fatalf("beyond the client cap: %+v", err)
	}
	if err := fa.unsubscribe("app://items_show/1"); err != nil {
		t.Fatal(err)
	}
	if err := fb.subscribe("app://items_show/4"); err != nil {
		t.Fatalf("after an unsubscribe: %+v", err)
	}
	if got := a.LiveStats().Subscriptions; got != 3 {
		t.Fatalf("%d subscriptions, want 3", got)
	}
}

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
