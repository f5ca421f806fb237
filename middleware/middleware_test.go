package middleware

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// TestMain fails the package's tests if any goroutine outlives them: no
// middleware may start one that it does not end.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}

// fakeSession is a server.ClientSession with a chosen ID.
type fakeSession struct{ id string }

var _ server.ClientSession = (*fakeSession)(nil)

func (s *fakeSession) Initialize()       {}
func (s *fakeSession) Initialized() bool { return true }
func (s *fakeSession) SessionID() string { return s.id }
func (s *fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return make(chan mcp.JSONRPCNotification, 1)
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// ok is a command that succeeds with "ok".
func ok(context.Context, *Call) (any, error) { return "ok", nil }

func TestChainOrder(t *testing.T) {
	var trace []string
	record := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, call *Call) (any, error) {
				trace = append(trace, "enter "+name)
				defer func() { trace = append(trace, "exit "+name) }()
				return next(ctx, call)
			}
		}
	}
	command := func(context.Context, *Call) (any, error) {
		trace = append(trace, "command")
		return nil, nil
	}

	tests := []struct {
		name string
		mws  []Middleware
		want []string
	}{
		{"empty", nil, []string{"command"}},
		{"one", []Middleware{record("a")}, []string{"enter a", "command", "exit a"}},
		{
			"first is outermost",
			[]Middleware{record("a"), record("b"), record("c")},
			[]string{"enter a", "enter b", "enter c", "command", "exit c", "exit b", "exit a"},
		},
		{
			"nil is skipped",
			[]Middleware{record("a"), nil, record("c")},
			[]string{"enter a", "enter c", "command", "exit c", "exit a"},
		},
		{
			"nested chains flatten",
			[]Middleware{Chain(record("a"), record("b")), record("c")},
			[]string{"enter a", "enter b", "enter c", "command", "exit c", "exit b", "exit a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trace = nil
			if _, err := Chain(tt.mws...)(command)(t.Context(), &Call{Command: "c"}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(trace, tt.want) {
				t.Errorf("trace = %q, want %q", trace, tt.want)
			}
		})
	}
}

// Chain composes the middleware it was given when it was called: a caller
// that goes on to reuse its slice (Chain(mws...), then mws[0] = …) must not
// change a chain already built.
func TestChainCopiesItsArguments(t *testing.T) {
	var trace []string
	named := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, call *Call) (any, error) {
				trace = append(trace, name)
				return next(ctx, call)
			}
		}
	}
	mws := []Middleware{named("a"), named("b")}
	chain := Chain(mws...)
	mws[0], mws[1] = named("x"), nil
	if _, err := chain(ok)(t.Context(), &Call{Command: "c"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !slices.Equal(trace, want) {
		t.Errorf("trace = %q, want %q", trace, want)
	}
}

func TestOrigin(t *testing.T) {
	if got := OriginFrom(context.Background()); got != App {
		t.Errorf("OriginFrom(empty) = %v, want App", got)
	}
	for _, tt := range []struct {
		o    Origin
		text string
	}{{App, "app"}, {Agent, "agent"}, {Live, "live"}} {
		t.Run(tt.text, func(t *testing.T) {
			ctx := WithOrigin(context.Background(), tt.o)
			if got := OriginFrom(ctx); got != tt.o {
				t.Errorf("OriginFrom(WithOrigin(%v)) = %v", tt.o, got)
			}
			if got := tt.o.String(); got != tt.text {
				t.Errorf("String() = %q, want %q", got, tt.text)
			}
			// The innermost WithOrigin wins, as context values do.
			if got := OriginFrom(WithOrigin(ctx, Live)); got != Live {
				t.Errorf("OriginFrom(WithOrigin(WithOrigin(%v), Live)) = %v", tt.o, got)
			}
		})
	}
}
