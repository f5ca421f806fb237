package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// authenticate: no token is anonymous, a demo token is its user, any other
// token is 401 and reaches nothing.
func TestAuthenticate(t *testing.T) {
	var got user
	var signedIn, reached bool
	h := authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		got, signedIn = userFrom(r.Context())
	}))
	for _, tc := range []struct {
		header   string
		status   int
		reached  bool
		signedIn bool
		name     string
	}{
		{"", http.StatusOK, true, false, ""},
		{"Bearer demo-ada", http.StatusOK, true, true, "ada"},
		{"Bearer demo-kurt", http.StatusOK, true, true, "kurt"},
		{"Bearer nope", http.StatusUnauthorized, false, false, ""},
		{"Basic ZGVtbzpkZW1v", http.StatusUnauthorized, false, false, ""},
	} {
		reached, signedIn, got = false, false, user{}
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status || reached != tc.reached || signedIn != tc.signedIn || got.Name != tc.name {
			t.Errorf("Authorization %q: status %d, reached %v, user %+v (%v); want %d, %v, %q",
				tc.header, rec.Code, reached, got, signedIn, tc.status, tc.reached, tc.name)
		}
		if tc.status == http.StatusUnauthorized && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: 401 without a Bearer challenge", tc.header)
		}
	}
}

// my_orders answers the caller's orders only, and needs a user.
func TestMyOrders(t *testing.T) {
	s := newTestShop(t)
	for _, u := range demoUsers() {
		ctx := context.WithValue(t.Context(), userKey{}, u)
		res, err := s.a.Call(ctx, "my_orders", MyOrdersArgs{})
		if err != nil {
			t.Fatalf("%s: my_orders: %v", u.Name, err)
		}
		b, _ := json.Marshal(res)
		var out OrdersResult
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Orders {
			if o.CustomerID != u.CustomerID {
				t.Errorf("%s's orders hold customer %d's order %d", u.Name, o.CustomerID, o.ID)
			}
		}
		if out.Count != len(out.Orders) {
			t.Errorf("%s: count %d of %d orders", u.Name, out.Count, len(out.Orders))
		}
	}
	if _, err := s.a.Call(t.Context(), "my_orders", MyOrdersArgs{}); err == nil {
		t.Error("my_orders without a user answered")
	}
	if grantSignedIn(t.Context(), "my_orders") || !grantSignedIn(t.Context(), "customers_show") {
		t.Error("the grant must hide my_orders, and only it, from anonymous callers")
	}
}
