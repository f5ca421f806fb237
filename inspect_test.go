package adapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// TestReportOverHTTP serves a report through a real server: JSON for a
// client that asks for it, text otherwise, never sniffed into another type,
// and nothing but GET and HEAD.
func TestReportOverHTTP(t *testing.T) {
	a := Wrap(server.NewMCPServer("t", "1"))
	Live(a, "items_show", "One item.", func(context.Context, itemArgs) (item, error) { return item{}, nil })
	hs := httptest.NewServer(a.Inspect())
	defer hs.Close()

	for _, tc := range []struct {
		name, method, accept string
		status               int
		contentType          string
		body                 string // what the body holds
	}{
		{"json", http.MethodGet, "application/json", http.StatusOK, "application/json", `"name":"items_show"`},
		{"text", http.MethodGet, "", http.StatusOK, "text/plain; charset=utf-8", "items_show (live)"},
		{"head", http.MethodHead, "", http.StatusOK, "text/plain; charset=utf-8", ""},
		{"post", http.MethodPost, "", http.StatusMethodNotAllowed, "text/plain; charset=utf-8", "GET and HEAD only"},
		{"delete", http.MethodDelete, "application/json", http.StatusMethodNotAllowed, "text/plain; charset=utf-8", "GET and HEAD only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, hs.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			res, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, tc.status, body)
			}
			if got := res.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if tc.status == http.StatusOK && res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("the report may be sniffed: no X-Content-Type-Options: nosniff")
			}
			if tc.status == http.StatusMethodNotAllowed && res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q, want \"GET, HEAD\"", res.Header.Get("Allow"))
			}
			if !strings.Contains(string(body), tc.body) {
				t.Errorf("body %q does not hold %q", body, tc.body)
			}
			if tc.name == "json" {
				var r Report
				if err := json.Unmarshal(body, &r); err != nil || len(r.Commands) != 1 {
					t.Errorf("the JSON report decodes to %+v (%v), want one command", r, err)
				}
			}
		})
	}
}
