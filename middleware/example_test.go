package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/mcplive/adapter/middleware"
	"golang.org/x/time/rate"
)

// A middleware of your own is a function from Handler to Handler. This one
// keeps a command away from agents while the application itself may still
// call it.
func Example_denyAgents() {
	denyAgents := func(command string) middleware.Middleware {
		return func(next middleware.Handler) middleware.Handler {
			return func(ctx context.Context, call *middleware.Call) (any, error) {
				if call.Command == command && call.Origin == middleware.Agent {
					return nil, fmt.Errorf("%s is not available to agents", command)
				}
				return next(ctx, call)
			}
		}
	}
	deleteCustomer := func(ctx context.Context, call *middleware.Call) (any, error) {
		return "deleted", nil
	}

	h := middleware.Chain(denyAgents("customers_delete"))(deleteCustomer)

	_, err := h(context.Background(), &middleware.Call{Command: "customers_delete", Origin: middleware.Agent})
	fmt.Println(err)
	result, _ := h(context.Background(), &middleware.Call{Command: "customers_delete", Origin: middleware.App})
	fmt.Println(result)
	// Output:
	// customers_delete is not available to agents
	// deleted
}

type subjectKey struct{}

// Limit each authenticated user, whichever sessions they use, to two calls
// of a command a minute; anonymous agents are limited per session or
// address as usual.
func ExampleRateLimit() {
	limit := middleware.RateLimit(rate.Every(time.Minute), 2,
		middleware.KeyFunc(func(ctx context.Context, call *middleware.Call) string {
			if subject, ok := ctx.Value(subjectKey{}).(string); ok {
				return "user:" + subject
			}
			return middleware.DefaultKey(ctx, call)
		}))
	h := limit(func(ctx context.Context, call *middleware.Call) (any, error) {
		return "a page of customers", nil
	})

	ctx := context.WithValue(context.Background(), subjectKey{}, "ada")
	call := &middleware.Call{Command: "customers_index", Origin: middleware.Agent}
	for range 3 {
		result, err := h(ctx, call)
		var limited *middleware.RateLimitError
		if errors.As(err, &limited) {
			fmt.Printf("refused, retry in about %v\n", limited.RetryAfter.Round(time.Second))
			continue
		}
		fmt.Println(result)
	}
	// Output:
	// a page of customers
	// a page of customers
	// refused, retry in about 1m0s
}

// Log writes one record per call. Here the time and the duration are left
// out so that the output stays the same from run to run.
func ExampleLog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	}))
	h := middleware.Log(logger)(func(ctx context.Context, call *middleware.Call) (any, error) {
		if call.Origin == middleware.Agent {
			return nil, errors.New("customer 12 not found")
		}
		return "ok", nil
	})

	_, _ = h(context.Background(), &middleware.Call{Command: "customers_show", Origin: middleware.Live})
	_, _ = h(context.Background(), &middleware.Call{Command: "customers_show", Origin: middleware.Agent})
	// Output:
	// level=DEBUG msg=command command=customers_show origin=live outcome=ok
	// level=WARN msg=command command=customers_show origin=agent outcome=error error="customer 12 not found"
}

// On stateless Streamable HTTP the sessions have no ID, so RateLimit tells
// clients apart by address. Wrapping the transport's handler puts the
// address where RateLimit finds it; in a server, next is the
// *server.StreamableHTTPServer.
func ExampleRemoteAddrHandler() {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr, _ := middleware.RemoteAddrFrom(r.Context())
		key := middleware.DefaultKey(r.Context(), &middleware.Call{Command: "customers_index"})
		fmt.Println(addr, key)
	})
	h := middleware.RemoteAddrHandler(next)

	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = "203.0.113.7:51234"
	h.ServeHTTP(httptest.NewRecorder(), r)
	// Output:
	// 203.0.113.7:51234 addr:203.0.113.7
}
