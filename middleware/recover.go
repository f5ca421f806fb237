package middleware

import (
	"context"
	"log/slog"
	"runtime/debug"
)

// PanicError is the error of a call whose command panicked, as Recover
// returns it. Its message names only the command: the panic value and the
// stack may hold data or internals the agent must not see, so they are kept
// in fields for the server's own logs.
type PanicError struct {
	// Command is the name of the command that panicked.
	Command string
	// Value is the value the command panicked with.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// formats it.
	Stack []byte
}

// Error returns text such as "internal error in customers_show".
func (e *PanicError) Error() string {
	return "internal error in " + e.Command
}

// Recover turns a panic of the command into a *PanicError, so that one bad
// call fails alone instead of taking the server down, and logs the panic
// value and stack with logger at level Error (slog.Default() if logger is
// nil).
//
// It catches panics of whatever runs inside it, on the call's goroutine; a
// panic in a goroutine the command starts itself cannot be caught from here
// and still ends the program. Put Recover innermost, next to the
// command, or at least inside Log (see Default) so that Log records the
// failure as an ordinary error.
func Recover(logger *slog.Logger) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, call *Call) (result any, err error) {
			defer func() {
				v := recover()
				if v == nil {
					// Since Go 1.21 panic(nil) recovers as a
					// *runtime.PanicNilError, so nil means no panic.
					return
				}
				perr := &PanicError{Command: call.Command, Value: v, Stack: debug.Stack()}
				orDefault(logger).LogAttrs(ctx, slog.LevelError, "command panicked",
					slog.String("command", call.Command),
					slog.String("origin", call.Origin.String()),
					slog.Any("panic", v),
					slog.String("stack", string(perr.Stack)),
				)
				result, err = nil, perr
			}()
			return next(ctx, call)
		}
	}
}

// orDefault is logger, or slog.Default() when logger is nil. It is looked up
// per call so that a later slog.SetDefault takes effect.
func orDefault(logger *slog.Logger) *slog.Logger {
	if logger != nil {
		return logger
	}
	return slog.Default()
}
