package otel_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcplive/adapter"
)

// TestCancelledIsNoFailure: a read or a tools/call whose client gave up
// (the request's context cancelled while the command ran) is no failure of
// the server's, as the adapter itself logs it (at Debug): it must not
// count as internal, nor set its span's status to Error, or every closed
// connection and every completion overtaken by the next keystroke shows
// as a server error on the dashboards and in the error-rate alerts.
func TestCancelledIsNoFailure(t *testing.T) {
	h := newHarness(t, sdktrace.AlwaysSample(), nil)
	entered := make(chan struct{}, 1)
	adapter.Live(h.a, "items_wait", "Waits for its client to give up.", func(ctx context.Context, args showArgs) (string, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	for _, tc := range []struct {
		name    string
		method  string
		params  map[string]any
		metric  string
		spanned bool
	}{
		{"read", "resources/read", map[string]any{"uri": "app://items_wait/1"}, "mcplive.reads", true},
		{"call", "tools/call", map[string]any{"name": "items_wait", "arguments": map[string]any{"id": 1}}, "mcplive.calls", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": tc.method, "params": tc.params})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.a.HandleMessage(ctx, msg)
			}()
			<-entered
			cancel()
			<-done
			ms := h.collect(t)
			if v := value(t, ms, tc.metric, cmdAttrs("items_wait", adapter.OutcomeInternal)...); v > 0 {
				t.Errorf("%s counted %d internal failures for a request its client cancelled", tc.metric, v)
			}
			if !tc.spanned {
				return
			}
			spans := spansNamed(h.spans.Ended(), "read items_wait")
			if len(spans) != 1 {
				t.Fatalf("%d read spans, want 1", len(spans))
			}
			if s := spans[0].Status(); s.Code == codes.Error {
				t.Errorf("span status %v for a read its client cancelled", s)
			}
		})
	}
}
