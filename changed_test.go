package adapter_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

type ptrArgs struct {
	K string `json:"k"`
}

// A re-run whose read set changes: a change to a key it newly reads,
// reported while it runs, must cause one more run (docs/watching.md: "Every
// change reported with Changed is followed by a run that sees it").
func TestLiveChangeToANewlyReadKeyDuringARerun(t *testing.T) {
	var mu sync.Mutex
	data := map[string]string{"ptr": "a", "a": "1", "b": "1"}
	get := func(k string) string { mu.Lock(); defer mu.Unlock(); return data[k] }
	set := func(k, v string) { mu.Lock(); defer mu.Unlock(); data[k] = v }

	var block sync.Mutex
	gate := make(chan struct{}) // closed to let a blocked run finish
	reached := make(chan struct{}, 1)
	armed := false

	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "follow", "", func(ctx context.Context, args ptrArgs) (string, error) {
		adapter.Reads(ctx, "ptr")
		target := get("ptr")
		adapter.Reads(ctx, target)
		v := get(target)
		block.Lock()
		wait := armed
		armed = false
		block.Unlock()
		if wait {
			reached <- struct{}{}
			<-gate
		}
		return v, nil
	})
	c := adaptertest.New(t, a)
	sub, err := c.Listen("app://follow/x")
	if err != nil || len(sub.Acknowledged) != 1 {
		t.Fatalf("listen: %v %+v", err, sub)
	}

	// Point at b (same value): the re-run now reads {ptr, b} and returns "1".
	block.Lock()
	armed = true
	block.Unlock()
	set("ptr", "b")
	a.Changed("ptr")
	<-reached // the re-run has read b == "1" and is about to return
	set("b", "2")
	a.Changed("b") // the query is still filed under {a, ptr}
	close(gate)
	c.WaitIdle()

	got := sub.Take()
	if len(got) == 0 {
		text, _ := c.Read("app://follow/x")
		t.Fatalf("no notification, though the subscription's result is now %s (it was \"1\"); stats %+v", text, a.LiveStats())
	}

}
