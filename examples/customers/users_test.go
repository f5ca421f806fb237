package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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

// A session belongs to the user who opened it: another user's token, or
// none, gets for each verb what a session never issued gets, and the
// owner's session goes on.
func TestSessionsBelongToTheirUser(t *testing.T) {
	url, _ := startHTTP(t)
	bearer := func(token, session string) map[string]string {
		h := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20251125}
		if token != "" {
			h["Authorization"] = "Bearer " + token
		}
		if session != "" {
			h[server.HeaderKeySessionID] = session
		}
		return h
	}
	status, hdr, body := rawPOST(t, url, initLegacy, bearer("demo-ada", ""))
	ada := hdr.Get(server.HeaderKeySessionID)
	if status != http.StatusOK || ada == "" {
		t.Fatalf("Ada's initialize: %d %q", status, body)
	}
	read := `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"app://my_orders"}}`
	never := sessionIDPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAA"
	verbs := func(token, session string) (answers []string) {
		status, _, body := rawPOST(t, url, read, bearer(token, session))
		answers = append(answers, fmt.Sprint(status, body))
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			req, _ := http.NewRequestWithContext(t.Context(), method, url, nil)
			req.Header.Set("Accept", "text/event-stream")
			for k, v := range bearer(token, session) {
				req.Header.Set(k, v)
			}
			status, _, body := doRaw(t, req)
			answers = append(answers, fmt.Sprint(status, body))
		}
		return answers
	}
	unknown := verbs("demo-kurt", never)
	for _, token := range []string{"demo-kurt", ""} {
		if got := verbs(token, ada); !slices.Equal(got, unknown) {
			t.Errorf("token %q on Ada's session: %q; want what a session never issued gets: %q", token, got, unknown)
		}
	}
	if !strings.HasPrefix(unknown[0], "404") {
		t.Errorf("a never-issued session: %q, want 404s", unknown)
	}
	if status, _, body := rawPOST(t, url, read, bearer("demo-ada", ada)); status != http.StatusOK || !strings.Contains(body, `"contents"`) {
		t.Errorf("Ada reads on her session afterwards: %d %q", status, body)
	}
}
