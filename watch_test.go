package adapter_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
)

// legacyFollower is an adapter with one live command, follow
// (app://follow/{k}), and a send function that hands raw messages to it on
// an initialized legacy session and returns the answer as JSON.
func legacyFollower(t *testing.T) (*adapter.Adapter, func(raw string) string) {
	t.Helper()
	type args struct {
		K string `json:"k"`
	}
	srv := server.NewMCPServer("t", "1")
	a := adapter.Wrap(srv)
	adapter.Live(a, "follow", "", func(_ context.Context, args args) (string, error) { return args.K, nil })
	sess := server.NewInProcessSession("s1", nil)
	if err := srv.RegisterSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.UnregisterSession(context.Background(), "s1") })
	ctx := srv.WithContext(context.Background(), sess)
	send := func(raw string) string {
		b, _ := json.Marshal(a.HandleMessage(ctx, json.RawMessage(raw)))
		return string(b)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return a, send
}

// JSON may escape the method's slash; mcp-go decodes it to the same
// method, so the adapter must see the subscription all the same.
func TestLegacySubscribeWithAnEscapedMethod(t *testing.T) {
	a, send := legacyFollower(t)
	bad := send(`{"jsonrpc":"2.0","id":2,"method":"resources\u002fsubscribe","params":{"uri":"app://follow"}}`)
	if !strings.Contains(bad, `"code":-32002`) {
		t.Errorf("a malformed URI with an escaped method: %s, want resource-not-found", bad)
	}
	good := send(`{"jsonrpc":"2.0","id":3,"method":"resources\u002fsubscribe","params":{"uri":"app://follow/x"}}`)
	if !strings.Contains(good, `"result":{}`) || a.LiveStats().Subscriptions != 1 {
		t.Errorf("a valid URI with an escaped method: %s with %d subscriptions, want one", good, a.LiveStats().Subscriptions)
	}
}

// A resources/subscribe whose _meta is not an object was answered with
// success by mcp-go, which reads _meta leniently, while the adapter, which
// could not decode it, made no subscription: the client waited for
// notifications that never came. It is invalid params now, naming _meta,
// and makes nothing; an absent, null or empty _meta subscribes.
func TestLegacySubscribeWithAMalformedMeta(t *testing.T) {
	a, send := legacyFollower(t)
	for i, meta := range []string{`5`, `"x"`, `[1]`, `true`, `{"progressToken":`} {
		got := send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(10+i) + `,"method":"resources/subscribe","params":{"uri":"app://follow/x","_meta":` + meta + `}}`)
		if meta == `{"progressToken":` {
			// Not JSON at all: mcp-go's parse error, before any hook.
			if !strings.Contains(got, `"error"`) {
				t.Errorf("_meta %s: %s, want an error", meta, got)
			}
			continue
		}
		if !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, `"field":"_meta"`) {
			t.Errorf("_meta %s: %s, want invalid params naming _meta", meta, got)
		}
		if n := a.LiveStats().Subscriptions; n != 0 {
			t.Fatalf("_meta %s made %d subscriptions, want none", meta, n)
		}
	}
	for i, meta := range []string{`null`, `{}`, `{"progressToken":1}`} {
		got := send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(20+i) + `,"method":"resources/subscribe","params":{"uri":"app://follow/x` + string(rune('0'+i)) + `","_meta":` + meta + `}}`)
		if !strings.Contains(got, `"result":{}`) || a.LiveStats().Subscriptions != i+1 {
			t.Errorf("_meta %s: %s with %d subscriptions, want subscribed", meta, got, a.LiveStats().Subscriptions)
		}
	}
}

// A resources/subscribe whose _meta is an object that mcp.Meta cannot
// decode (a number past float64, anywhere in it) is still an object: mcp-go
// reads it as no _meta at all, a legacy request, and answers success. It
// was refused as "_meta must be an object"; it subscribes.
func TestLegacySubscribeWithAnUndecodableMetaObject(t *testing.T) {
	a, send := legacyFollower(t)
	for i, meta := range []string{`{"progressToken":1e400}`, ` {"x":{"y":[-1e999]}}`} {
		got := send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(10+i) + `,"method":"resources/subscribe","params":{"uri":"app://follow/x` + strconv.Itoa(i) + `","_meta":` + meta + `}}`)
		if !strings.Contains(got, `"result":{}`) || a.LiveStats().Subscriptions != i+1 {
			t.Errorf("_meta %s: %s with %d subscriptions, want subscribed", meta, got, a.LiveStats().Subscriptions)
		}
	}
}

type ptrArgs struct {
	K string `json:"k"`
}

// A re-run whose read set changes: a change to a key it newly reads,
// reported while it runs, must cause one more run (docs/watching.md: "Every
// change reported with Changed is followed by a run that sees it").
func TestLiveChangeToANewlyReadKeyDuringARerun(t *testing.T) {
	var mu sync.Mutex
	data := map[string]string{"ptr": "a", "a": "1", "b": "1"}
	get := func(k string) string { mu.Lock(); defer mu.Unlock(); return data[k] }
	set := func(k, v string) { mu.Lock(); defer mu.Unlock(); data[k] = v }

	var block sync.Mutex
	gate := make(chan struct{}) // closed to let a blocked run finish
	reached := make(chan struct{}, 1)
	armed := false

	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "follow", "", func(ctx context.Context, args ptrArgs) (string, error) {
		adapter.Reads(ctx, "ptr")
		target := get("ptr")
		adapter.Reads(ctx, target)
		v := get(target)
		block.Lock()
		wait := armed
		armed = false
		block.Unlock()
		if wait {
			reached <- struct{}{}
			<-gate
		}
		return v, nil
	})
	c := adaptertest.New(t, a)
	sub, err := c.Listen("app://follow/x")
	if err != nil || len(sub.Acknowledged) != 1 {
		t.Fatalf("listen: %v %+v", err, sub)
	}

	// Point at b (same value): the re-run now reads {ptr, b} and returns "1".
	block.Lock()
	armed = true
	block.Unlock()
	set("ptr", "b")
	a.Changed("ptr")
	<-reached // the re-run has read b == "1" and is about to return
	set("b", "2")
	a.Changed("b") // the query is still filed under {a, ptr}
	close(gate)
	c.WaitIdle()

	got := sub.Take()
	if len(got) == 0 {
		text, _ := c.Read("app://follow/x")
		t.Fatalf("no notification, though the subscription's result is now %s (it was \"1\"); stats %+v", text, a.LiveStats())
	}

}

// Notifications wait for the round of re-runs they belong to, but not for
// a re-run that takes long: a subscriber hears its change while another
// query of the same change still runs.
func TestHeldNotificationsDoNotWaitForASlowRun(t *testing.T) {
	st := newBatchStore(1)
	release := make(chan struct{})
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "items_show", "One item.", st.show)
	adapter.Live(a, "slow", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		adapter.Reads(ctx, "items")
		if middleware.OriginFrom(ctx) == middleware.Live {
			<-release
		}
		return "same", nil
	})
	c := adaptertest.New(t, a)
	sub, err := c.Listen("app://items_show/1", "app://slow")
	if err != nil || len(sub.Acknowledged) != 2 {
		t.Fatalf("listen: %v %+v", err, sub)
	}
	st.set(1, "v2")
	a.Changed("items")
	deadline := time.After(10 * time.Second)
	for len(sub.Received()) == 0 {
		select {
		case <-deadline:
			t.Fatalf("no notification while a slow re-run of the same change runs: %+v", a.LiveStats())
		case <-time.After(time.Millisecond):
		}
	}
	if got := sub.Received(); len(got) != 1 || got[0] != "app://items_show/1" {
		t.Errorf("heard %q", got)
	}
	close(release)
	c.WaitIdle()
}
