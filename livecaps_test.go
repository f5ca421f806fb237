package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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
