package adapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
)

// Notifications wait for the round of re-runs they belong to, but not for
// a re-run that takes long: a subscriber hears its change while another
// query of the same change still runs.
func TestHeldNotificationsDoNotWaitForASlowRun(t *testing.T) {
	st := newBatchStore(1)
	release := make(chan struct{})
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "items_show", "One item.", st.show)
	adapter.Live(a, "slow", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		adapter.Reads(ctx, "items")
		if middleware.OriginFrom(ctx) == middleware.Live {
			<-release
		}
		return "same", nil
	})
	c := adaptertest.New(t, a)
	sub, err := c.Listen("app://items_show/1", "app://slow")
	if err != nil || len(sub.Acknowledged) != 2 {
		t.Fatalf("listen: %v %+v", err, sub)
	}
	st.set(1, "v2")
	a.Changed("items")
	deadline := time.After(10 * time.Second)
	for len(sub.Received()) == 0 {
		select {
		case <-deadline:
			t.Fatalf("no notification while a slow re-run of the same change runs: %+v", a.LiveStats())
		case <-time.After(time.Millisecond):
		}
	}
	if got := sub.Received(); len(got) != 1 || got[0] != "app://items_show/1" {
		t.Errorf("heard %q", got)
	}
	close(release)
	c.WaitIdle()
}
