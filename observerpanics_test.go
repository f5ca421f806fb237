package adapter_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// panickyObserver panics in the method named by where.
type panickyObserver struct{ where string }

func (p panickyObserver) Observe(ctx context.Context, op adapter.Op) (context.Context, adapter.Observation) {
	if p.where == "Observe" {
		panic("Observe")
	}
	if p.where == "nil" {
		return nil, nil
	}
	return ctx, p
}

func (p panickyObserver) Phase(string, time.Time, time.Time) {
	if p.where == "Phase" {
		panic("Phase")
	}
}

func (p panickyObserver) End(adapter.Outcome, error) {
	if p.where == "End" {
		panic("End")
	}
}

// An Observer that panics, or returns no Observation, costs what it
// observes nothing: reads, tools/calls, re-runs (on the adapter's workers,
// where a panic ended the process) and notifications go on, and the panic
// is logged.
func TestObserverPanicsCostNothing(t *testing.T) {
	for _, where := range []string{"Observe", "Phase", "End", "nil"} {
		t.Run(where, func(t *testing.T) {
			var logs syncBuffer
			a := adapter.Wrap(server.NewMCPServer("t", "1"),
				adapter.WithObserver(panickyObserver{where}),
				adapter.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			version := 0
			var mu sync.Mutex
			adapter.Live(a, "item_show", "", func(ctx context.Context, args struct {
				ID int `json:"id"`
			}) (map[string]int, error) {
				adapter.Reads(ctx, "items")
				mu.Lock()
				defer mu.Unlock()
				return map[string]int{"id": args.ID, "version": version}, nil
			})
			c := adaptertest.New(t, a)
			if _, err := c.Read("app://item_show/1"); err != nil {
				t.Fatalf("read: %v", err)
			}
			if res, err := c.CallTool("item_show", map[string]any{"id": 1}); err != nil || res.IsError {
				t.Fatalf("tools/call: %v %v", err, res)
			}
			sub, err := c.Listen("app://item_show/1")
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			version++
			mu.Unlock()
			a.Changed("items")
			c.WaitIdle()
			if got := sub.Take(); len(got) != 1 {
				t.Errorf("after a change, heard %v; want one notification", got)
			}
			if where != "nil" && !strings.Contains(logs.String(), "Observer panicked") {
				t.Errorf("the panic was not logged: %s", logs.String())
			}
		})
	}
}
