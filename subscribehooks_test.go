package adapter_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
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
