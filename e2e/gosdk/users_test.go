package gosdk

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The example's demo users (examples/customers/users.go): Ada is customer
// 1, Kurt customer 9, each signed in with a bearer token.
const (
	myOrdersURI = "app://my_orders"
	adaToken    = "demo-ada"
	kurtToken   = "demo-kurt"
	adaID       = 1
	kurtID      = 9
)

// bearer adds a user's token to every request go-sdk sends.
type bearer struct {
	next  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// TestPerUserOrdersWithGoSDK: two users of one example subscribe to the same
// URI, app://my_orders, which answers each their own orders. A write to one
// user's orders notifies that user and never the other, on each era; each
// read shows the reader's orders only; an anonymous client does not see
// the command.
func TestPerUserOrdersWithGoSDK(t *testing.T) {
	for _, era := range []string{legacyEra, modernEra} {
		t.Run(era, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			t.Cleanup(cancel)
			url := example.StartHTTP(t)
			signIn := func(token string) *watcher {
				wire := newWireLog()
				dumpOnFailure(t, wire)
				hc := httpClient(t, wire)
				if token != "" {
					hc.Transport = bearer{next: hc.Transport, token: token}
				}
				return connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, era, wire)
			}
			ada, kurt := signIn(adaToken), signIn(kurtToken)
			ada.subscribe(ctx, myOrdersURI)
			kurt.subscribe(ctx, myOrdersURI)

			// Ada's order is Ada's news alone; Kurt's own order is the fence
			// that shows nothing reached him before it.
			createOrder(t, ctx, ada, adaID)
			if before := ada.awaitUpdate(ctx, myOrdersURI); len(before) > 0 {
				t.Errorf("Ada heard %q before her own order", before)
			}
			createOrder(t, ctx, kurt, kurtID)
			if before := kurt.awaitUpdate(ctx, myOrdersURI); len(before) > 0 {
				t.Errorf("Kurt heard %q before his own order: Ada's order reached him", before)
			}
			createOrder(t, ctx, ada, adaID)
			if before := ada.awaitUpdate(ctx, myOrdersURI); len(before) > 0 {
				t.Errorf("Ada heard %q before her second order: Kurt's order reached her", before)
			}

			for who, w := range map[int64]*watcher{adaID: ada, kurtID: kurt} {
				orders := readOrders(t, ctx, w)
				if len(orders) == 0 || slices.ContainsFunc(orders, func(o order) bool { return o.CustomerID != who }) {
					t.Errorf("customer %d reads my_orders as %+v; want their own orders only", who, orders)
				}
			}
			if late := append(ada.pending(), kurt.pending()...); len(late) > 0 {
				t.Errorf("after the fences, heard %q, want nothing", late)
			}

			anonymous := signIn("")
			if templates := anonymous.templates(ctx); slices.ContainsFunc(templates, func(tmpl string) bool { return strings.HasPrefix(tmpl, myOrdersURI) }) {
				t.Errorf("an anonymous client lists %s among %q", myOrdersURI, templates)
			}
		})
	}
}

type order struct {
	ID         int64 `json:"id"`
	CustomerID int64 `json:"customer_id"`
}

func createOrder(t *testing.T, ctx context.Context, w *watcher, customer int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "orders_create", Arguments: map[string]any{
		"customer_id": customer, "amount_cents": 1200, "status": "open", "placed_on": "2026-12-01",
	}})
	if err != nil || res.IsError {
		t.Fatalf("orders_create for customer %d: %v %+v", customer, err, res)
	}
}

func readOrders(t *testing.T, ctx context.Context, w *watcher) []order {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	read, err := w.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: myOrdersURI})
	if err != nil || len(read.Contents) != 1 {
		t.Fatalf("read %s: %v %+v", myOrdersURI, err, read)
	}
	var res struct {
		Orders []order `json:"orders"`
	}
	if err := json.Unmarshal([]byte(read.Contents[0].Text), &res); err != nil {
		t.Fatalf("read %s: %v", myOrdersURI, err)
	}
	return res.Orders
}
