package adapter

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/mcplive/adapter/middleware"
)

// Panics of the user's code outside the middleware chain.
//
// The chain's Recover turns a panicking command into a
// *middleware.PanicError, so that one bad call fails alone. The adapter
// also runs code of the user's outside the chain: the arguments type's
// Validate and UnmarshalJSON while it checks arguments, the result's
// MarshalJSON while it answers and while a re-run digests the result, the
// grant function (which grants nothing when it panics), the client key
// function (which keys the request "" when it panics) and the change
// feed's Publish. A
// panic there would end the process on stdio, and always on a re-run's
// worker, where no request can carry it. recoverUserPanic, deferred around
// each, fails the call alone as Recover would: the error names only the
// command, and the panic value and stack go to the log.

// recoverUserPanic, deferred, turns a panic of the caller into a
// *middleware.PanicError for command in *err, logged at Error by logger
// with what the adapter was doing (during).
func recoverUserPanic(logger *slog.Logger, command, during string, err *error) {
	v := recover()
	if v == nil {
		return
	}
	perr := &middleware.PanicError{Command: command, Value: v, Stack: debug.Stack()}
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(context.Background(), slog.LevelError, "adapter: user code panicked",
		slog.String("command", command),
		slog.String("during", during),
		slog.Any("panic", v),
		slog.String("stack", string(perr.Stack)),
	)
	*err = perr
}
