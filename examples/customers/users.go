package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcplive/adapter"
)

// Users: over HTTP the example knows two demo users, each a customer of the
// shop, who send a bearer token. Their token is all the authentication the
// demo has: a real server takes the user from its identity provider (OAuth,
// an API gateway) the same way, into the request's context.
//
// my_orders is per user: it answers the caller's own orders. So the adapter
// keeps one live query per user (adapter.WithScope), re-runs each with its
// user's request values, and a write to Ada's orders notifies Ada and never
// Kurt. Callers without a token are anonymous: they share one scope, see
// every other command, and do not see my_orders at all (adapter.WithGrant).
//
// A session belongs to the user who opened it (adapter.WithIdentity): Kurt,
// or an anonymous caller, who learns the Mcp-Session-Id of Ada's session
// gets 404 for it, as for a session that does not exist, and cannot read,
// unsubscribe, listen or end anything of hers. The per-client subscription
// cap counts each user's subscriptions together.

// user is a signed-in caller.
type user struct {
	Name       string
	CustomerID int64 // the customer the user is
}

// demoUsers are the example's users, by token. They are printed at start.
func demoUsers() map[string]user {
	return map[string]user{
		"demo-ada":  {Name: "ada", CustomerID: 1},  // Ada Lovelace
		"demo-kurt": {Name: "kurt", CustomerID: 9}, // Kurt Gödel
	}
}

type userKey struct{}

// userFrom is the signed-in user of a request, put there by authenticate.
func userFrom(ctx context.Context) (user, bool) {
	u, ok := ctx.Value(userKey{}).(user)
	return u, ok
}

// authenticate puts the user whose token a request bears into its context.
// A request without Authorization is anonymous; one with a token the
// example does not know is answered 401.
func authenticate(next http.Handler) http.Handler {
	users := demoUsers()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if auth == "" {
			next.ServeHTTP(w, r)
			return
		}
		token, ok := strings.CutPrefix(auth, "Bearer ")
		u, known := users[token]
		if !ok || !known {
			w.Header().Set("WWW-Authenticate", `Bearer realm="customers"`)
			http.Error(w, "unknown bearer token: the demo tokens are printed at start", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// userIdentity is who a request is (adapter.WithIdentity): its user's
// name, or "" for an anonymous caller. The example's scope happens to be
// the same string; a shop whose scope were a household would still give
// each member an identity of their own.
func userIdentity(ctx context.Context) string {
	u, _ := userFrom(ctx)
	return u.Name
}

// userScope is the scope of a request (adapter.WithScope): its user's name,
// or "" for anonymous callers, who share one.
func userScope(ctx context.Context) (string, error) {
	u, _ := userFrom(ctx)
	return u.Name, nil
}

// grantSignedIn hides my_orders from anonymous callers: it has no answer
// for them.
func grantSignedIn(ctx context.Context, command string) bool {
	if command != "my_orders" {
		return true
	}
	_, ok := userFrom(ctx)
	return ok
}

// userOptions are the adapter options that make the example per user.
func userOptions() []adapter.Option {
	return []adapter.Option{
		adapter.WithIdentity(userIdentity),
		adapter.WithScope(userScope),
		adapter.WithGrant(grantSignedIn),
	}
}

// MyOrdersArgs are the arguments of my_orders: app://my_orders{?status}.
type MyOrdersArgs struct {
	Status OrderStatus `json:"status,omitempty" jsonschema_description:"Only orders with this status."`
}

// myOrders answers the caller's orders, oldest first. Its re-runs carry the
// values of the request that subscribed (WithScope), so userFrom finds the
// user there as it does in a read.
func (s *shop) myOrders(ctx context.Context, args MyOrdersArgs) (OrdersResult, error) {
	u, ok := userFrom(ctx)
	if !ok {
		// The grant keeps anonymous callers out; a caller in process
		// (Adapter.Call) without a user lands here.
		return OrdersResult{}, errors.New("my_orders needs a signed-in user")
	}
	adapter.Reads(ctx, tableOrders)
	orders, err := s.st.ordersOf(ctx, u.CustomerID, string(args.Status))
	if err != nil {
		return OrdersResult{}, err
	}
	return ordersResult(orders), nil
}

// ordersOf returns a customer's orders with status ("" for any), oldest
// first.
func (s *store) ordersOf(ctx context.Context, customerID int64, status string) ([]Order, error) {
	rows, err := s.db.QueryContext(ctx,
		s.d.rebind(`SELECT id, customer_id, amount_cents, status, placed_on FROM orders
		 WHERE customer_id = ?1 AND (?2 = '' OR status = ?2)
		 ORDER BY placed_on, id`),
		customerID, status)
	if err != nil {
		return nil, fmt.Errorf("orders of customer %d: %w", customerID, err)
	}
	defer rows.Close()
	orders := []Order{}
	for rows.Next() {
		var o Order
		if err := rows.Scan(&o.ID, &o.CustomerID, &o.AmountCents, &o.Status, asText(&o.PlacedOn, time.DateOnly)); err != nil {
			return nil, fmt.Errorf("scan order: %w", err)
		}
		orders = append(orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	return orders, nil
}
