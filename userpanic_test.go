package adapter_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
)

// fragileArgs panics in Validate when asked to.
type fragileArgs struct {
	ID    int  `json:"id"`
	Panic bool `json:"panic,omitempty"`
}

func (a fragileArgs) Validate() error {
	if a.Panic {
		panic("Validate of fragileArgs")
	}
	return nil
}

// fragileResult panics in MarshalJSON when its Panic is set.
type fragileResult struct {
	ID    int
	Panic bool
}

func (r fragileResult) MarshalJSON() ([]byte, error) {
	if r.Panic {
		panic("MarshalJSON of fragileResult")
	}
	return []byte(`{"id":` + string(rune('0'+r.ID%10)) + `}`), nil
}

// fragileApp declares fragile_show, whose result panics when marshalled
// while *breaking is set.
func fragileApp(t *testing.T) (*adapter.Adapter, *adaptertest.Client, *atomic.Bool) {
	t.Helper()
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	breaking := new(atomic.Bool)
	adapter.Live(a, "fragile_show", "", func(ctx context.Context, args fragileArgs) (fragileResult, error) {
		adapter.Reads(ctx, "fragile")
		return fragileResult{ID: args.ID, Panic: breaking.Load()}, nil
	})
	return a, adaptertest.New(t, a), breaking
}

// Middleware's Recover keeps a panicking command from taking the server
// down; the user's code the adapter runs outside the chain (an arguments
// type's Validate, a result's MarshalJSON, also when a re-run digests it)
// must not take it down either. Each fails its call alone, with an error
// that tells nothing of the panic, and the server answers the next call.
func TestUserCodePanicsFailTheCallAlone(t *testing.T) {
	_, c, breaking := fragileApp(t)
	ok := func() {
		t.Helper()
		if _, err := c.Read("app://fragile_show/1"); err != nil {
			t.Fatalf("the next read failed: %v", err)
		}
	}
	t.Run("Validate, read", func(t *testing.T) {
		_, err := c.Read("app://fragile_show/1?panic=true")
		if err == nil || strings.Contains(err.Error(), "Validate of fragileArgs") {
			t.Errorf("read: %v; want an internal error that does not show the panic", err)
		}
		ok()
	})
	t.Run("Validate, tools/call", func(t *testing.T) {
		res, err := c.CallTool("fragile_show", map[string]any{"id": 1, "panic": true})
		if err == nil && !res.IsError {
			t.Errorf("tools/call succeeded: %v", res.Content)
		}
		ok()
	})
	t.Run("MarshalJSON, read and tools/call", func(t *testing.T) {
		breaking.Store(true)
		defer breaking.Store(false)
		if _, err := c.Read("app://fragile_show/2"); err == nil {
			t.Error("read succeeded")
		}
		if res, err := c.CallTool("fragile_show", map[string]any{"id": 2}); err == nil && !res.IsError {
			t.Errorf("tools/call succeeded: %v", res.Content)
		}
	})
	ok()
}

// A re-run runs on a worker of the adapter's: a panic there, where no
// request can carry it, ended the process.
func TestUserCodePanicInReRunFailsTheRunAlone(t *testing.T) {
	a, c, breaking := fragileApp(t)
	sub, err := c.Listen("app://fragile_show/3")
	if err != nil {
		t.Fatal(err)
	}
	breaking.Store(true)
	a.Changed("fragile")
	c.WaitIdle()
	// The run failed, which changes what the query gives: the subscriber
	// hears of it, and reads the failure.
	if got := sub.Take(); len(got) != 1 {
		t.Fatalf("after the failed re-run, heard %v; want one notification", got)
	}
	if _, err := c.Read("app://fragile_show/3"); err == nil {
		t.Error("the read succeeded while the result cannot be marshalled")
	}
	breaking.Store(false)
	a.Changed("fragile")
	c.WaitIdle()
	if got := sub.Take(); len(got) != 1 {
		t.Fatalf("once it recovered, heard %v; want one notification", got)
	}
}

// A grant function that panics grants nothing: the command is listed,
// read and called as one that does not exist, and the server lives on.
func TestGrantThatPanicsGrantsNothing(t *testing.T) {
	a := adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithGrant(func(_ context.Context, name string) bool {
		if name == "fragile_show" {
			panic("grant")
		}
		return true
	}))
	adapter.Live(a, "fragile_show", "", func(ctx context.Context, args fragileArgs) (fragileResult, error) {
		return fragileResult{ID: args.ID}, nil
	})
	adapter.Live(a, "sturdy_show", "", func(ctx context.Context, args fragileArgs) (fragileResult, error) {
		return fragileResult{ID: args.ID}, nil
	})
	c := adaptertest.New(t, a)
	if _, err := c.Read("app://fragile_show/1"); err == nil {
		t.Error("read of a command whose grant panicked succeeded")
	}
	if res, err := c.CallTool("fragile_show", map[string]any{"id": 1}); err == nil && !res.IsError {
		t.Errorf("tools/call of a command whose grant panicked succeeded: %v", res.Content)
	}
	if _, err := c.Read("app://sturdy_show/1"); err != nil {
		t.Errorf("read of another command: %v", err)
	}
}

// A client key function that panics keys the subscription with "", one
// key shared by every such request, and the subscription goes on.
func TestClientKeyThatPanicsSharesOneKey(t *testing.T) {
	a := adapter.Wrap(server.NewMCPServer("t", "1"),
		adapter.WithClientSubscriptionCap(1),
		adapter.WithClientKey(func(context.Context, *middleware.Call) string { panic("client key") }))
	adapter.Live(a, "fragile_show", "", func(ctx context.Context, args fragileArgs) (fragileResult, error) {
		return fragileResult{ID: args.ID}, nil
	})
	first, second := adaptertest.New(t, a), adaptertest.New(t, a)
	sub, err := first.Listen("app://fragile_show/1")
	if err != nil || len(sub.Acknowledged) != 1 {
		t.Fatalf("first client: %v %+v", err, sub)
	}
	sub, err = second.Listen("app://fragile_show/2")
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Refused) != 1 {
		t.Errorf("second client under the same key beyond a cap of 1: acknowledged %v, refused %v", sub.Acknowledged, sub.Refused)
	}
}
