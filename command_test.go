package adapter_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/time/rate"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
)

// recorder is a middleware that notes every call it sees.
type recorder struct {
	mu    sync.Mutex
	name  string
	calls []string
	log   *[]string
}

func (r *recorder) middleware(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, call *middleware.Call) (any, error) {
		r.mu.Lock()
		kind := "run"
		if call.Completion != nil {
			kind = "complete"
		}
		sess := "no-session"
		if call.Session != nil {
			sess = "session"
		}
		r.calls = append(r.calls, call.Command+" "+call.Origin.String()+" "+middleware.OriginFrom(ctx).String()+" "+kind+" "+sess+" "+string(call.RawArgs))
		*r.log = append(*r.log, r.name+" in")
		r.mu.Unlock()
		res, err := next(ctx, call)
		r.mu.Lock()
		*r.log = append(*r.log, r.name+" out")
		r.mu.Unlock()
		return res, err
	}
}

func TestMiddlewareSeesEveryPathInOrder(t *testing.T) {
	var order []string
	outer := &recorder{name: "outer", log: &order}
	inner := &recorder{name: "inner", log: &order}
	srv, a := newServer(t, adapter.WithMiddleware(outer.middleware, inner.middleware))
	c := connect(t, srv)
	ctx := context.Background()

	call := mcp.CallToolRequest{}
	call.Params.Name = "customers_show"
	call.Params.Arguments = map[string]any{"id": 1}
	if _, err := c.CallTool(ctx, call); err != nil {
		t.Fatal(err)
	}
	read := mcp.ReadResourceRequest{}
	read.Params.URI = "app://customers_show/2"
	if _, err := c.ReadResource(ctx, read); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Call(ctx, "customers_show", map[string]any{"id": 3}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`customers_show agent agent run session {"id":1}`,
		`customers_show agent agent run session {"id":2}`,
		`customers_show app app run no-session {"id":3}`,
	}
	if strings.Join(outer.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls seen:\n%s\nwant\n%s", strings.Join(outer.calls, "\n"), strings.Join(want, "\n"))
	}
	if got := strings.Join(order[:4], ","); got != "outer in,inner in,inner out,outer out" {
		t.Errorf("order = %s, want the first middleware outermost", got)
	}
}

func TestRateLimitSharedByToolsReadsAndCompletion(t *testing.T) {
	srv, a := newServer(t, adapter.WithRateLimit(rate.Every(1<<62), 3))
	c := connect(t, srv)
	ctx := context.Background()

	read := func(uri string) error {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		_, err := c.ReadResource(ctx, req)
		return err
	}
	for i := range 2 {
		if err := read("app://customers_show/1"); err != nil {
			t.Fatalf("read %d within the burst: %v", i, err)
		}
	}
	call := mcp.CallToolRequest{}
	call.Params.Name = "customers_show"
	call.Params.Arguments = map[string]any{"id": 1}
	if res, err := c.CallTool(ctx, call); err != nil || res.IsError {
		t.Fatalf("third call within the burst: %v %+v", err, res)
	}
	// The bucket is empty: a read, a tool call and a completion are refused.
	if err := read("app://customers_show/1"); err == nil || !strings.Contains(err.Error(), "rate limit exceeded") {
		t.Errorf("read beyond the burst: %v, want a rate limit error", err)
	}
	res, err := c.CallTool(ctx, call)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "rate limit exceeded") {
		t.Errorf("tool call beyond the burst: %v %+v, want an isError rate limit result", err, res)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc == nil || sc["retryAfterMs"] == nil {
		t.Errorf("the isError result should carry retryAfterMs: %+v", res.StructuredContent)
	}
	compl := mcp.CompleteRequest{}
	compl.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: "app://customers_show/{id}"}
	compl.Params.Argument = mcp.CompleteArgument{Name: "id"}
	if _, err := c.Complete(ctx, compl); err == nil || !strings.Contains(err.Error(), "rate limit exceeded") {
		t.Errorf("completion beyond the burst: %v, want a rate limit error", err)
	}
	// Another command has its own bucket; the application is never limited.
	if err := read("app://customers_index"); err != nil {
		t.Errorf("another command: %v", err)
	}
	if _, err := a.Call(ctx, "customers_show", map[string]any{"id": 1}); err != nil {
		t.Errorf("origin App must not be limited: %v", err)
	}
	// Another session has its own bucket.
	other := connect(t, srv)
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "app://customers_show/1"
	if _, err := other.ReadResource(ctx, req); err != nil {
		t.Errorf("another session: %v", err)
	}
}

// TestWrapRefusesUselessRateLimits: a limit that lets no call through, or
// that is not a number at all, is a mistake Wrap names, not a silent
// absence of limiting.
func TestWrapRefusesUselessRateLimits(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit rate.Limit
		burst int
	}{
		{"negative", -1, 1},
		{"NaN", rate.Limit(math.NaN()), 1},
		{"no burst", 10, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "rate limit") {
					t.Errorf("WithRateLimit(%v, %d): recovered %v, want a panic naming the rate limit", tt.limit, tt.burst, r)
				}
			}()
			adapter.Wrap(server.NewMCPServer("t", "1"), adapter.WithRateLimit(tt.limit, tt.burst))
		})
	}
}

// A middleware may keep state in the handler it returns, as net/http
// middleware does (a per-command semaphore, a circuit breaker): the adapter
// wraps each command's handler once, so that state lives as long as the
// command. Completions must meet the same wrapped handler every time, not a
// chain built afresh for each request that starts from empty state.
func TestMiddlewareStateOutlivesACompletion(t *testing.T) {
	var mu sync.Mutex
	var seen []int // for each completion, the calls its handler has seen
	counting := func(next middleware.Handler) middleware.Handler {
		n := 0 // state of this one wrapped handler
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			mu.Lock()
			n++
			if call.Completion != nil {
				seen = append(seen, n)
			}
			mu.Unlock()
			return next(ctx, call)
		}
	}
	srv, _ := newServer(t, adapter.WithMiddleware(counting))
	c := connect(t, srv)
	compl := mcp.CompleteRequest{}
	compl.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: "app://customers_show/{id}"}
	compl.Params.Argument = mcp.CompleteArgument{Name: "id"}
	for range 3 {
		if _, err := c.Complete(context.Background(), compl); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{1, 2, 3}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("the completions' handler had seen %v calls, want %v: each completion got a handler of its own", seen, want)
	}
}

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
