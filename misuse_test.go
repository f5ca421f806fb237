package adapter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// A second Close after the first has returned finds nothing left to wait
// for: it answers nil whatever its ctx, as the first did, instead of a
// coin toss between the first's end and ctx's (both ready).
func TestMisuseCloseAgainAfterCloseReturned(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tc := range []struct {
		name   string
		second context.Context
	}{
		{"background", context.Background()},
		{"expired", expired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newLiveServer(t, newItemStore(2))
			if err := a.Close(context.Background()); err != nil {
				t.Fatalf("first Close: %v", err)
			}
			// select picks at random among ready cases: enough tries
			// that a coin toss shows.
			for i := range 64 {
				if err := a.Close(tc.second); err != nil {
					t.Fatalf("Close #%d after the first returned nil: %v", i+2, err)
				}
			}
		})
	}
}

// One server has one adapter. A second Wrap used to succeed and break the
// first silently: reads of its commands answered -32603 "resource not
// found", resources/subscribe answered not-found yet held the
// subscription, and completion went to the second adapter. It panics,
// saying so; a Wrap that panicked on an option did not wrap the server.
func TestMisuseWrapTwice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     []Option
		wantFirst bool // the first Wrap panics
	}{
		{"after a Wrap", nil, false},
		{"after a Wrap with options", []Option{WithScheme("shop"), WithSubscriptionCap(3)}, false},
		{"after a Wrap that panicked", []Option{WithSubscriptionCap(0)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server.NewMCPServer("t", "1")
			if got := panicOf(func() { Wrap(srv, tc.first...) }); (got != nil) != tc.wantFirst {
				t.Fatalf("first Wrap panicked with %v, want a panic: %v", got, tc.wantFirst)
			}
			got := panicOf(func() { Wrap(srv, WithScheme("other")) })
			if tc.wantFirst {
				if got != nil {
					t.Fatalf("Wrap of a server whose first Wrap panicked: %v", got)
				}
				return
			}
			if msg, _ := got.(string); !strings.Contains(msg, "adapter.Wrap: the server is wrapped already") {
				t.Fatalf("second Wrap of one server: panic %#v, want one saying it is wrapped already", got)
			}
		})
	}
}

func panicOf(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
