package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// JSON may escape the method's slash; mcp-go decodes it to the same
// method, so the adapter must see the subscription all the same.
func TestLegacySubscribeWithAnEscapedMethod(t *testing.T) {
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
	defer srv.UnregisterSession(context.Background(), "s1")
	ctx := srv.WithContext(context.Background(), sess)
	send := func(raw string) string {
		b, _ := json.Marshal(a.HandleMessage(ctx, json.RawMessage(raw)))
		return string(b)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	bad := send(`{"jsonrpc":"2.0","id":2,"method":"resources\u002fsubscribe","params":{"uri":"app://follow"}}`)
	if !strings.Contains(bad, `"code":-32002`) {
		t.Errorf("a malformed URI with an escaped method: %s, want resource-not-found", bad)
	}
	good := send(`{"jsonrpc":"2.0","id":3,"method":"resources\u002fsubscribe","params":{"uri":"app://follow/x"}}`)
	if !strings.Contains(good, `"result":{}`) || a.LiveStats().Subscriptions != 1 {
		t.Errorf("a valid URI with an escaped method: %s with %d subscriptions, want one", good, a.LiveStats().Subscriptions)
	}
}
