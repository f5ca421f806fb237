package otel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/otel"
)

// TestResourceURIBounded: with WithResourceURIs, a read's span records
// its URI as the client sent it; the client chooses its length, so the
// attribute must be bounded. The adapter refuses a URI over 2048 bytes and
// repeats at most 200 of them in its errors: a span that holds a
// megabyte of one, for every such read, is the client's to fill.
func TestResourceURIBounded(t *testing.T) {
	h := newHarness(t, sdktrace.AlwaysSample(), []otel.Option{otel.WithResourceURIs()})
	for _, tc := range []struct {
		name string
		uri  string
	}{
		{"ascii", "app://items_show/1?" + strings.Repeat("x", 1<<20)},
		{"runes", "app://items_show/" + strings.Repeat("é", 1<<19)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": map[string]any{"uri": tc.uri}})
			if err != nil {
				t.Fatal(err)
			}
			h.a.HandleMessage(context.Background(), msg)
			spans := spansNamed(h.spans.Ended(), "read items_show")
			if len(spans) == 0 {
				t.Fatal("no read span")
			}
			got := attr(spans[len(spans)-1], "mcp.resource.uri").AsString()
			if len(got) > 4096 || !utf8.ValidString(got) || !strings.HasPrefix(tc.uri, strings.TrimSuffix(got, "…")) {
				t.Errorf("mcp.resource.uri of %d bytes (valid UTF-8 %v), want at most 4096 of the URI's", len(got), utf8.ValidString(got))
			}
			if value(t, h.collect(t), "mcplive.reads", cmdAttrs("items_show", adapter.OutcomeNotFound)...) < 1 {
				t.Error("the read was not counted")
			}
		})
	}
}
