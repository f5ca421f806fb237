package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

func TestRemoteAddrFrom(t *testing.T) {
	if addr, ok := RemoteAddrFrom(context.Background()); ok || addr != "" {
		t.Errorf("RemoteAddrFrom(empty) = %q, %v; want \"\", false", addr, ok)
	}
	if addr, ok := RemoteAddrFrom(ContextWithRemoteAddr(context.Background(), "")); ok || addr != "" {
		t.Errorf("RemoteAddrFrom(empty address) = %q, %v; want \"\", false", addr, ok)
	}
	ctx := ContextWithRemoteAddr(context.Background(), "192.0.2.1:5000")
	if addr, ok := RemoteAddrFrom(ctx); !ok || addr != "192.0.2.1:5000" {
		t.Errorf("RemoteAddrFrom = %q, %v; want 192.0.2.1:5000, true", addr, ok)
	}
}

func TestRemoteAddrContext(t *testing.T) {
	// It must fit mcp-go's context function types as it is.
	var _ server.HTTPContextFunc = RemoteAddrContext
	var _ server.SSEContextFunc = RemoteAddrContext

	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = "198.51.100.4:1234"
	if addr, _ := RemoteAddrFrom(RemoteAddrContext(context.Background(), r)); addr != r.RemoteAddr {
		t.Errorf("address = %q, want %q", addr, r.RemoteAddr)
	}
	// A request built by hand (as mcp-go does for its Handle entry point)
	// has no address; the context stays as it was.
	ctx := context.Background()
	if got := RemoteAddrContext(ctx, &http.Request{}); got != ctx {
		t.Error("a request without an address changed the context")
	}
	if got := RemoteAddrContext(ctx, nil); got != ctx {
		t.Error("a nil request changed the context")
	}
}

func TestRemoteAddrHandler(t *testing.T) {
	var seen string
	h := RemoteAddrHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = RemoteAddrFrom(r.Context())
	}))
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = "198.51.100.4:1234"
	h.ServeHTTP(httptest.NewRecorder(), r)
	if seen != "198.51.100.4:1234" {
		t.Errorf("handler saw %q, want 198.51.100.4:1234", seen)
	}
}
