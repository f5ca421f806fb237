package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// A command that ended because its request was cancelled did not fail:
// it is logged at Debug, not as an error; any other failure, a cancellation
// the request did not ask for included, is logged at Error.
func TestCancelledRequestIsNoCommandFailure(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name      string
		ctx       context.Context
		err       error
		wantError bool
	}{
		{"request cancelled", cancelled, context.Canceled, false},
		{"request cancelled, wrapped", cancelled, fmt.Errorf("query: %w", context.Canceled), false},
		{"canceled, request alive", context.Background(), context.Canceled, true},
		{"other error, request cancelled", cancelled, errors.New("boom"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			a := Wrap(server.NewMCPServer("t", "1"), WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			a.internal(tc.ctx, &command{name: "c"}, "app://c", tc.err)
			if got := strings.Contains(logs.String(), "level=ERROR"); got != tc.wantError {
				t.Errorf("logged at Error: %v, want %v: %s", got, tc.wantError, logs.String())
			}
		})
	}
}
