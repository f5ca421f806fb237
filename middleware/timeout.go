package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Timeout gives each call at most d to run: the command's context is
// cancelled after d, and an error the command returns once that has happened
// becomes an error that names the command and wraps both
// context.DeadlineExceeded and the command's own error (errors.Is finds
// either).
//
// Timeout cannot stop a command; it only tells it to stop, through ctx. A
// command must pass ctx on to whatever it waits for (database/sql's
// QueryContext, http.NewRequestWithContext, a select on ctx.Done()) and
// return when it is done; one that ignores ctx runs to its end, and its
// result is then returned as usual. Timeout starts no goroutine of its own.
//
// If ctx already has an earlier deadline, that one applies and its expiry is
// reported as the command reports it. A d of zero or less disables Timeout.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		if d <= 0 {
			return next
		}
		// ours is the cause of our deadline. The caller's context may end
		// too while the command is still returning; the cause tells which
		// ended the command's context first, as ctx.Err() cannot.
		ours := errors.New("middleware.Timeout")
		return func(ctx context.Context, call *Call) (any, error) {
			tctx, cancel := context.WithTimeoutCause(ctx, d, ours)
			defer cancel()
			result, err := next(tctx, call)
			// Ours only if our deadline ended the command's context: a
			// caller's earlier cancellation or deadline is the caller's
			// business and passes through unchanged.
			if err != nil && context.Cause(tctx) == ours {
				return nil, &timeoutError{command: call.Command, after: d, cause: err}
			}
			return result, err
		}
	}
}

// timeoutError is the error of a call that Timeout cut short.
type timeoutError struct {
	command string
	after   time.Duration
	cause   error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%s timed out after %v", e.command, e.after)
}

func (e *timeoutError) Unwrap() []error {
	return []error{context.DeadlineExceeded, e.cause}
}
