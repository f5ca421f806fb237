package adaptertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

type stuckArgs struct {
	ID int64 `json:"id"`
}

// A listen stream whose first run never ends is not acknowledged: Listen
// gives up after its bound, cancels the request, and says why, rather
// than hang the test.
func TestListenGivesUpWithoutAnAcknowledgement(t *testing.T) {
	started := make(chan struct{}, 1)
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "stuck", "A command whose run waits for its context to end.",
		func(ctx context.Context, args stuckArgs) (int64, error) {
			started <- struct{}{}
			<-ctx.Done() // ended by the cancelled request
			return 0, ctx.Err()
		})
	c := New(t, a)
	sub, err := c.listen(50*time.Millisecond, []string{"app://stuck/1"})
	if err == nil {
		t.Fatalf("Listen returned %+v and no error", sub)
	}
	if !strings.Contains(err.Error(), "no acknowledgement within 50ms") {
		t.Fatalf("error %q does not say the stream was not acknowledged in time", err)
	}
	select {
	case <-started:
	default:
		t.Fatal("the first run never started: the error came from somewhere else")
	}
	c.WaitIdle()
	if n := a.LiveStats().Subscriptions; n != 0 {
		t.Fatalf("%d subscriptions after the cancelled listen", n)
	}
}
