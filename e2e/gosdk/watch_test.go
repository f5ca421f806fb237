package gosdk

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// testTimeout bounds one scenario, whatever the server does.
const testTimeout = 2 * time.Minute

// The scenario's URIs: customers_show of customer 1 (Ada Lovelace) is the
// subscription under test; customers_show of customer 2 is the fence.
// customers_show reads only its own row, so a write to customer 3 is
// unrelated to both.
const (
	watchedURI  = "app://customers_show/1"
	fenceURI    = "app://customers_show/2"
	watchedID   = 1
	fenceID     = 2
	unrelatedID = 3
	adaName     = "Ada Lovelace" // the seeded name of customer 1
)

// TestWatchWithGoSDK drives the example with go-sdk on each era over each
// transport: subscribe to an expanded URI, hear a write that changes it,
// hear nothing for an unrelated write, unsubscribe and hear nothing for a
// write that changes it, and find the session still working.
//
// "Hear nothing" is never a sleep. A second subscription is the fence: after
// the write that must stay silent, a write changes the fence's customer,
// and when the fence's notification arrives nothing may have arrived before
// it. On stdio the server writes notifications in order on one pipe, so the
// fence is exact. Over HTTP on 2026-07-28 each Subscribe is a listen stream
// of its own, so a wrong notification on the watched URI's stream could in
// principle still be in flight when the fence's arrives; the final check
// that nothing is pending catches it if it has arrived by then.
func TestWatchWithGoSDK(t *testing.T) { eachTransportAndEra(t, watchScenario) }

// eachTransportAndEra runs scenario with a go-sdk client of the example
// over Streamable HTTP and stdio, on each protocol era, checking that no
// goroutine outlives it.
func eachTransportAndEra(t *testing.T, scenario func(*testing.T, context.Context, *watcher)) {
	transports := []struct {
		name    string
		connect func(t *testing.T, ctx context.Context, era string) *watcher
	}{
		{"http", func(t *testing.T, ctx context.Context, era string) *watcher {
			wire := newWireLog()
			url := example.StartHTTP(t)
			dumpOnFailure(t, wire)
			return connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient(t, wire)}, era, wire)
		}},
		{"stdio", func(t *testing.T, ctx context.Context, era string) *watcher {
			wire := newWireLog()
			cmd := stdioTransport(t)
			dumpOnFailure(t, wire)
			return connect(t, ctx, &stdioTap{Transport: cmd, log: wire}, era, wire)
		}},
	}
	for _, tr := range transports {
		for _, era := range []string{legacyEra, modernEra} {
			t.Run(tr.name+"/"+era, func(t *testing.T) {
				// Registered first, so it runs last: after the session
				// closed and the example stopped.
				ignore := goleak.IgnoreCurrent()
				t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				t.Cleanup(cancel)
				scenario(t, ctx, tr.connect(t, ctx, era))
			})
		}
	}
}

func watchScenario(t *testing.T, ctx context.Context, w *watcher) {
	// 1. Subscribe to the watched URI and to the fence.
	w.subscribe(ctx, watchedURI)
	w.subscribe(ctx, fenceURI)

	// 2. A write that changes the watched customer is heard, with exactly
	// the URI subscribed to, and nothing else is.
	w.update(ctx, watchedID, adaName+" (2)")
	if before := w.awaitUpdate(ctx, watchedURI); len(before) > 0 {
		t.Errorf("step 2: before the update of %s, heard %q, want nothing", watchedURI, before)
	}

	// 3. An unrelated write is not heard: nothing arrives before the fence.
	w.update(ctx, unrelatedID, "Grace Hopper (2)")
	w.update(ctx, fenceID, "Alan Turing (2)")
	if before := w.awaitUpdate(ctx, fenceURI); len(before) > 0 {
		t.Errorf("step 3: after an unrelated write (customer %d) and before the fence, heard %q, want nothing (no repeat of step 2's either)", unrelatedID, before)
	}

	// 4. After unsubscribing, a write that changes the customer is not
	// heard, and the fence still is.
	w.unsubscribe(ctx, watchedURI)
	w.update(ctx, watchedID, adaName+" (3)")
	w.update(ctx, fenceID, "Alan Turing (3)")
	if before := w.awaitUpdate(ctx, fenceURI); len(before) > 0 {
		t.Errorf("step 4: after unsubscribing from %s and changing it, before the fence, heard %q, want nothing", watchedURI, before)
	}

	// 5. The session still works: a tool call and a read see the last
	// write.
	sessionWorks(t, ctx, w, adaName+" (3)")
	if late := w.pending(); len(late) > 0 {
		t.Errorf("after the fence, heard %q, want nothing", late)
	}
}

// sessionWorks checks that w's session still answers a tools/call and a
// resources/read, and that both see customer 1 named want.
func sessionWorks(t *testing.T, ctx context.Context, w *watcher, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "customers_show", Arguments: map[string]any{"id": watchedID}})
	if err != nil {
		t.Fatalf("step 5: tools/call customers_show after the scenario: %v", err)
	}
	if res.IsError {
		t.Fatalf("step 5: tools/call customers_show: tool error %s", contentText(res.Content))
	}
	// Beside the result, a resource_link to the URI that reads and watches
	// it, which go-sdk decodes as one.
	var linked []string
	for _, content := range res.Content {
		if l, ok := content.(*mcp.ResourceLink); ok {
			linked = append(linked, l.URI)
		}
	}
	if len(linked) != 1 || linked[0] != watchedURI {
		t.Errorf("step 5: tools/call customers_show linked %q, want [%s]", linked, watchedURI)
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("step 5: tools/call customers_show: structured content: %v", err)
	}
	if got := customerName(t, string(structured)); got != want {
		t.Errorf("step 5: tools/call customers_show: name %q, want %q", got, want)
	}

	read, err := w.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: watchedURI})
	if err != nil {
		t.Fatalf("step 5: resources/read %s after the scenario: %v", watchedURI, err)
	}
	if len(read.Contents) != 1 {
		t.Fatalf("step 5: resources/read %s: %d contents, want 1", watchedURI, len(read.Contents))
	}
	c := read.Contents[0]
	if c.URI != watchedURI || c.MIMEType != "application/json" {
		t.Errorf("step 5: resources/read %s: content uri %q, mimeType %q; want the URI sent and application/json", watchedURI, c.URI, c.MIMEType)
	}
	if got := customerName(t, c.Text); got != want {
		t.Errorf("step 5: resources/read %s: name %q, want %q", watchedURI, got, want)
	}
}

// dumpOnFailure prints the wire log when the test fails.
func dumpOnFailure(t *testing.T, wire *wireLog) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what go-sdk sent (and the notifications it heard):\n%s", wire)
		}
	})
}
