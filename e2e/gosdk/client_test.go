package gosdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol eras. go-sdk v1.8.0 (mcp/client.go, Client.Connect) asks for
// ClientSessionOptions.ProtocolVersion, or its latest (2026-07-28) when
// that is empty. From 2026-07-28 on it first tries server/discover and,
// when the server does not take it, falls back to initialize with
// 2025-11-25; before, it sends initialize with the version asked for. The
// tests always ask explicitly, so that a newer go-sdk cannot silently move
// them to another era, and check what was negotiated.
const (
	legacyEra = "2025-11-25" // initialize; resources/subscribe and resources/unsubscribe
	modernEra = "2026-07-28" // server/discover; one subscriptions/listen request per Subscribe
)

const (
	// callTimeout bounds every request and every wait for something the
	// server should send.
	callTimeout = 15 * time.Second
	// updatesCap is how many notifications a watcher holds before the test
	// reads them; far more than any test provokes.
	updatesCap = 256
)

// A watcher is a go-sdk client session with what the tests observe of it:
// the URIs of notifications/resources/updated in arrival order, the
// resourceSubscriptions of each notifications/subscriptions/acknowledged
// (2026-07-28), and the wire log.
type watcher struct {
	t    *testing.T
	cs   *mcp.ClientSession
	era  string
	wire *wireLog

	updated  chan string
	acks     chan []string
	overflow atomic.Bool // a notification did not fit in updated or acks
}

// connect connects a go-sdk client over transport, asking for era, and
// closes the session when the test ends. The session must negotiate era.
func connect(t *testing.T, ctx context.Context, transport mcp.Transport, era string, wire *wireLog) *watcher {
	t.Helper()
	w := &watcher{
		t: t, era: era, wire: wire,
		updated: make(chan string, updatesCap),
		acks:    make(chan []string, updatesCap),
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcplive-gosdk-e2e", Version: "0.0.0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			wire.add(wireEntry{what: "recv", method: "notifications/resources/updated", body: req.Params.URI})
			select {
			case w.updated <- req.Params.URI:
			default:
				w.overflow.Store(true)
			}
		},
	})
	// go-sdk swallows the acknowledgement of a listen stream; its
	// receiving middleware is where a client can see it.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
				got := slices.Clone(p.Notifications.ResourceSubscriptions)
				wire.add(wireEntry{what: "recv", method: method, body: fmt.Sprintf("resourceSubscriptions %q", got)})
				select {
				case w.acks <- got:
				default:
					w.overflow.Store(true)
				}
			}
			return next(ctx, method, req)
		}
	})

	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect asking for %s: %v", era, err)
	}
	w.cs = cs
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close the session: %v", err)
		}
		if w.overflow.Load() {
			t.Errorf("more than %d notifications were pending at once; some were not recorded", updatesCap)
		}
	})
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("negotiated protocol version %q, asked for %q", got, era)
	}
	return w
}

// httpClient returns an http.Client whose requests go to w's wire log, and
// closes its idle connections when the test ends.
func httpClient(t *testing.T, wire *wireLog) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: &httpTap{base: base, log: wire}}
}

// subscribe subscribes to uri and returns once the server holds the
// subscription: on 2025-11-25 when resources/subscribe answered, on
// 2026-07-28 when the listen stream go-sdk opened for it acknowledged
// exactly uri (go-sdk's Subscribe returns before that).
func (w *watcher) subscribe(ctx context.Context, uri string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := w.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		w.t.Fatalf("subscribe to %s: %v", uri, err)
	}
	if w.era == legacyEra {
		return
	}
	select {
	case got := <-w.acks:
		if !slices.Equal(got, []string{uri}) {
			w.t.Fatalf("subscribe to %s: the listen stream acknowledged resourceSubscriptions %q, want exactly [%q]", uri, got, uri)
		}
	case <-ctx.Done():
		w.t.Fatalf("subscribe to %s: no notifications/subscriptions/acknowledged within %v", uri, callTimeout)
	}
}

// unsubscribe ends the subscription to uri and returns once the server has
// been told: on 2025-11-25 when resources/unsubscribe answered, on
// 2026-07-28 when go-sdk's notifications/cancelled for the URI's listen
// request was delivered (HTTP: answered; stdio: written, and the server
// reads it before anything written after).
func (w *watcher) unsubscribe(ctx context.Context, uri string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := w.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		w.t.Fatalf("unsubscribe from %s: %v", uri, err)
	}
	if w.era == legacyEra {
		return
	}
	listen, ok := w.wire.last(func(e wireEntry) bool {
		return e.method == "subscriptions/listen" && slices.Equal(e.resources, []string{uri})
	})
	if !ok {
		w.t.Fatalf("unsubscribe from %s: the wire log has no subscriptions/listen request for it", uri)
	}
	sent, err := w.wire.waitFor(ctx, func(e wireEntry) bool {
		return e.method == "notifications/cancelled" && e.cancels == listen.id
	})
	if err != nil {
		w.t.Fatalf("unsubscribe from %s: go-sdk sent no notifications/cancelled for its listen request (id %s) within %v", uri, listen.id, callTimeout)
	}
	// A notification is accepted with 202 (Streamable HTTP); the
	// 2026-07-28 schema does not require request _meta on notifications.
	if sent.err != "" || (sent.status != 0 && sent.status != http.StatusAccepted) {
		w.t.Errorf("unsubscribe from %s: the server refused go-sdk's notifications/cancelled, want HTTP 202:\n%s", uri, sent)
	}
}

// update renames customer id with customers_update, a write that calls
// Changed for the customer's row.
func (w *watcher) update(ctx context.Context, id int, name string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "customers_update",
		Arguments: map[string]any{"id": id, "name": name},
	})
	if err != nil {
		w.t.Fatalf("customers_update id %d: %v", id, err)
	}
	if res.IsError {
		w.t.Fatalf("customers_update id %d: tool error %s", id, contentText(res.Content))
	}
}

// awaitUpdate waits for notifications/resources/updated with exactly uri
// and returns the URIs of those that arrived before it.
func (w *watcher) awaitUpdate(ctx context.Context, uri string) (before []string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	for {
		select {
		case got := <-w.updated:
			if got == uri {
				return before
			}
			before = append(before, got)
		case <-ctx.Done():
			w.t.Fatalf("no notifications/resources/updated for %s within %v (other URIs heard meanwhile: %q)", uri, callTimeout, before)
		}
	}
}

// pending returns the URIs of the notifications that arrived and were not
// yet awaited.
func (w *watcher) pending() []string {
	var got []string
	for {
		select {
		case uri := <-w.updated:
			got = append(got, uri)
		default:
			return got
		}
	}
}

// customerName reads the name out of a customer's JSON.
func customerName(t *testing.T, text string) string {
	t.Helper()
	var c struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		t.Fatalf("a customer that is not JSON: %v: %.200s", err, text)
	}
	return c.Name
}

// contentText joins the text contents of a tool result.
func contentText(content []mcp.Content) string {
	var s string
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}
