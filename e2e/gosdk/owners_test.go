package gosdk

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// Sessions belong to their user (adapter.WithIdentity in the example).
// Ada, with go-sdk, holds a subscription; Kurt, who learned what names
// it (her Mcp-Session-Id, her listen's request ID), and an anonymous
// caller who learned the same, try every verb on it over raw HTTP. Each
// gets what a session that was never issued gets, nothing of Ada's
// changes, and her subscription still notifies her.

// intruders are the callers other than the owner: Kurt's token, and none.
var intruders = []string{kurtToken, ""}

// rawRequest sends one request to the example with token ("" for none)
// and headers, and returns its status and body; a stream that does not
// end is cut at ctx's deadline, which the caller reports.
func rawRequest(ctx context.Context, hc *http.Client, url, method, token, body string, header map[string]string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res.StatusCode, string(data), err
}

// foreignSessionRequests reads mcplive_foreign_session_requests_total from
// the example's /metrics.
func foreignSessionRequests(t *testing.T, ctx context.Context, hc *http.Client, url string) int {
	t.Helper()
	status, body, err := rawRequest(ctx, hc, strings.TrimSuffix(url, "/mcp")+"/metrics", http.MethodGet, "", "", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mcplive_foreign_session_requests_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics: %q", sc.Text())
			}
			return int(n)
		}
	}
	t.Fatal("/metrics has no mcplive_foreign_session_requests_total")
	return 0
}

// TestSessionBelongsToItsUser (2025-11-25): on Ada's session, Kurt and an
// anonymous caller get for a read, an unsubscribe, tools/list, a GET
// stream and a DELETE exactly what a never-issued session ID gets (404);
// Ada's subscription then still notifies her, and /metrics counts each
// refusal.
func TestSessionBelongsToItsUser(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	url := example.StartHTTP(t)
	wire := newWireLog()
	dumpOnFailure(t, wire)
	hc := httpClient(t, wire)
	hc.Transport = bearer{next: hc.Transport, token: adaToken}
	ada := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, legacyEra, wire)
	ada.subscribe(ctx, myOrdersURI)
	session := ada.cs.ID()
	if session == "" {
		t.Fatal("go-sdk's session has no ID")
	}

	raw := httpClient(t, newWireLog())
	verbs := []struct{ name, method, body string }{
		{"read", http.MethodPost, `{"jsonrpc":"2.0","id":71,"method":"resources/read","params":{"uri":"` + myOrdersURI + `"}}`},
		{"unsubscribe", http.MethodPost, `{"jsonrpc":"2.0","id":72,"method":"resources/unsubscribe","params":{"uri":"` + myOrdersURI + `"}}`},
		{"tools/list", http.MethodPost, `{"jsonrpc":"2.0","id":73,"method":"tools/list"}`},
		{"GET stream", http.MethodGet, ""},
		{"DELETE", http.MethodDelete, ""},
	}
	answer := func(token, session string, verb int) string {
		v := verbs[verb]
		status, body, err := rawRequest(ctx, raw, url, v.method, token, v.body, map[string]string{
			"Mcp-Session-Id": session, "MCP-Protocol-Version": legacyEra,
		})
		if err != nil {
			t.Fatalf("%s with token %q: %d, %v (a stream held open for whoever asks?)", v.name, token, status, err)
		}
		return fmt.Sprintf("%d %q", status, body)
	}
	const neverIssued = "customers-AAAAAAAAAAAAAAAAAAAAAAAAAA"
	refused := 0
	for _, token := range intruders {
		for i, v := range verbs {
			want := answer(token, neverIssued, i)
			if !strings.HasPrefix(want, "404 ") {
				t.Fatalf("%s with token %q on a never-issued session: %s, want 404", v.name, token, want)
			}
			if got := answer(token, session, i); got != want {
				t.Errorf("%s with token %q on Ada's session: %s; want what a never-issued session gets: %s", v.name, token, got, want)
			}
			refused++
		}
	}
	if got := foreignSessionRequests(t, ctx, raw, url); got != refused {
		t.Errorf("/metrics counts %d requests on another identity's session, want %d", got, refused)
	}

	// Nothing of Ada's changed: her subscription notifies her, on her
	// GET stream, and she reads on her session.
	createOrder(t, ctx, ada, adaID)
	if before := ada.awaitUpdate(ctx, myOrdersURI); len(before) > 0 {
		t.Errorf("Ada heard %q before her order", before)
	}
	if orders := readOrders(t, ctx, ada); len(orders) == 0 {
		t.Error("Ada reads no orders on her session")
	}
}

// TestListenBelongsToItsUser (2026-07-28): there are no sessions, and a
// listen is named by its request ID, which clients pick alike. Kurt and
// an anonymous caller who send notifications/cancelled for Ada's listen
// get what a cancel of a request that does not exist gets (202), her
// listen goes on and notifies her; her own cancel (go-sdk's Unsubscribe)
// ends it.
func TestListenBelongsToItsUser(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	url := example.StartHTTP(t)
	wire := newWireLog()
	dumpOnFailure(t, wire)
	hc := httpClient(t, wire)
	hc.Transport = bearer{next: hc.Transport, token: adaToken}
	ada := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, modernEra, wire)
	ada.subscribe(ctx, myOrdersURI)
	listen, ok := wire.last(func(e wireEntry) bool { return e.method == "subscriptions/listen" })
	if !ok || listen.id == "" {
		t.Fatal("the wire log has no subscriptions/listen of Ada's")
	}

	raw := httpClient(t, newWireLog())
	cancelOf := func(id string) string {
		return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id +
			`,"reason":"not yours","_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernEra + `"}}}`
	}
	modern := map[string]string{"MCP-Protocol-Version": modernEra, "Mcp-Method": "notifications/cancelled"}
	for _, token := range intruders {
		want, wantBody, err := rawRequest(ctx, raw, url, http.MethodPost, token, cancelOf("987654"), modern)
		if err != nil || want != http.StatusAccepted {
			t.Fatalf("a cancel with token %q of a request that does not exist: %d %q %v, want 202", token, want, wantBody, err)
		}
		got, body, err := rawRequest(ctx, raw, url, http.MethodPost, token, cancelOf(listen.id), modern)
		if err != nil || got != want || body != wantBody {
			t.Errorf("a cancel with token %q of Ada's listen: %d %q %v, want %d %q", token, got, body, err, want, wantBody)
		}
	}

	createOrder(t, ctx, ada, adaID)
	if before := ada.awaitUpdate(ctx, myOrdersURI); len(before) > 0 {
		t.Errorf("Ada heard %q before her order", before)
	}
	ada.unsubscribe(ctx, myOrdersURI)
}
