package middleware

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTimeout(t *testing.T) {
	notFound := errors.New("not found")
	// honours waits for its context and reports why it ended.
	honours := func(ctx context.Context, _ *Call) (any, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("query: %w", ctx.Err())
	}

	t.Run("deadline", func(t *testing.T) {
		h := Timeout(time.Millisecond)(honours)
		_, err := h(t.Context(), &Call{Command: "customers_index"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want one wrapping context.DeadlineExceeded", err)
		}
		if got, want := err.Error(), "customers_index timed out after 1ms"; got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	})

	t.Run("own error after the deadline is kept", func(t *testing.T) {
		h := Timeout(time.Millisecond)(func(ctx context.Context, _ *Call) (any, error) {
			<-ctx.Done()
			return nil, notFound
		})
		_, err := h(t.Context(), &Call{Command: "c"})
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, notFound) {
			t.Errorf("err = %v, want both DeadlineExceeded and the command's error", err)
		}
	})

	t.Run("caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Timeout(time.Hour)(honours)(ctx, &Call{Command: "c"})
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "timed out") {
			t.Errorf("err = %v, want the caller's cancellation unchanged", err)
		}
	})

	t.Run("caller's earlier deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		_, err := Timeout(time.Hour)(honours)(ctx, &Call{Command: "c"})
		if err == nil || strings.Contains(err.Error(), "timed out") {
			t.Errorf("err = %v, want the command's own report of the caller's deadline", err)
		}
	})

	// Our deadline fired first, and the caller's context ended only
	// while the command was still returning: the command stopped for
	// Timeout, so the error must say so, naming the command.
	for _, tt := range []struct {
		name   string
		caller func() (context.Context, context.CancelFunc)
	}{
		{"caller cancels after our deadline", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(t.Context())
		}},
		{"caller's later deadline passes too", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 20*time.Millisecond)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.caller()
			defer cancel()
			h := Timeout(time.Millisecond)(func(tctx context.Context, _ *Call) (any, error) {
				<-tctx.Done()
				err := fmt.Errorf("query: %w", tctx.Err())
				if _, ok := ctx.Deadline(); ok {
					<-ctx.Done()
				} else {
					cancel()
				}
				return nil, err
			})
			_, err := h(ctx, &Call{Command: "customers_index"})
			if err == nil || err.Error() != "customers_index timed out after 1ms" || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want customers_index timed out after 1ms", err)
			}
		})
	}

	t.Run("in time", func(t *testing.T) {
		h := Timeout(time.Hour)(func(ctx context.Context, _ *Call) (any, error) {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("the command's context has no deadline")
			}
			return "r", notFound
		})
		if result, err := h(t.Context(), &Call{Command: "c"}); result != "r" || err != notFound {
			t.Errorf("got %v, %v; want r, not found unchanged", result, err)
		}
	})

	t.Run("disabled", func(t *testing.T) {
		for _, d := range []time.Duration{0, -time.Second} {
			h := Timeout(d)(func(ctx context.Context, _ *Call) (any, error) {
				if _, ok := ctx.Deadline(); ok {
					t.Errorf("Timeout(%v) set a deadline", d)
				}
				return nil, nil
			})
			_, _ = h(t.Context(), &Call{})
		}
	})
}
