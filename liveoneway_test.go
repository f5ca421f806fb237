package adapter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// A conn delivers one way for its life: through its session's channel
// (listen streams, resources/subscribe on stdio and in process) or, for a
// Streamable HTTP session subscribing through HTTPHandler, on its GET
// stream. A session that asks for the other way while one is in use is
// refused, rather than having the notifications of the first way stranded
// (a review found them left in the outbox, with no deliverer).

// edgeSession is a fakeSession as mcp-go's Streamable HTTP would make it:
// one that can answer a request as an event stream.
type edgeSession struct{ *fakeSession }

func (edgeSession) UpgradeToSSEWhenReceiveNotification() {}

// newEdgeClient is newFakeClient for a Streamable HTTP session whose
// requests come through HTTPHandler.
func newEdgeClient(t *testing.T, a *Adapter, id string, buffer int) *fakeClient {
	s := &fakeSession{id: id, ch: make(chan mcp.JSONRPCNotification, buffer)}
	if err := a.Server().RegisterSession(context.Background(), edgeSession{s}); err != nil {
		t.Fatal(err)
	}
	f := &fakeClient{a: a, s: s, edge: true}
	t.Cleanup(f.close)
	return f
}

func TestLegacySubscribeBesideAListenIsRefused(t *testing.T) {
	const n = 5
	st := newItemStore(n + 1)
	a := newLiveServer(t, st)
	f := newEdgeClient(t, a, "edge-1", 4*n)
	var uris []string
	for id := 1; id <= n; id++ {
		uris = append(uris, fmt.Sprintf("app://items_show/%d", id))
	}
	if acked, _ := f.listen(t, uris...); len(acked) != n {
		t.Fatalf("listen acknowledged %v", acked)
	}
	before := a.LiveStats()

	err := f.subscribe("app://items_show/6")
	if err == nil || err.Code != mcp.INVALID_REQUEST || !strings.Contains(err.Message, "subscriptions/listen") {
		t.Fatalf("legacy subscribe beside a listen stream: %+v, want invalid request naming subscriptions/listen", err)
	}
	if after := a.LiveStats(); after.Subscriptions != before.Subscriptions || after.Sessions != before.Sessions {
		t.Fatalf("the refusal changed the registry: %+v, then %+v", before, after)
	}

	// The listen stream still hears every change.
	for id := 1; id <= n; id++ {
		st.set(id, "v2")
	}
	a.Changed("items")
	waitIdle(t, a)
	if got := f.take(); !slices.Equal(got, uris) {
		t.Fatalf("the listen stream heard %v, want %v (%+v)", got, uris, a.LiveStats())
	}
}

func TestListenBesideGETStreamSubscriptionsIsRefused(t *testing.T) {
	st := newItemStore(2)
	a := newLiveServer(t, st)
	f := newEdgeClient(t, a, "edge-2", 8)
	if err := f.subscribe("app://items_show/1"); err != nil {
		t.Fatalf("legacy subscribe: %+v", err)
	}
	before := a.LiveStats()
	acked, _ := f.listen(t, "app://items_show/2")
	if len(acked) != 0 {
		t.Fatalf("listen beside GET-stream subscriptions acknowledged %v, want none", acked)
	}
	if after := a.LiveStats(); after.Subscriptions != before.Subscriptions || after.Refused != before.Refused+1 {
		t.Fatalf("want the listen refused and nothing else changed: %+v, then %+v", before, after)
	}
	// Once the legacy subscription ends, the session may listen.
	if err := f.unsubscribe("app://items_show/1"); err != nil {
		t.Fatalf("unsubscribe: %+v", err)
	}
	waitIdle(t, a)
	if acked, _ := f.listen(t, "app://items_show/2"); len(acked) != 1 {
		t.Fatalf("listen after the legacy subscription ended acknowledged %v", acked)
	}
}
