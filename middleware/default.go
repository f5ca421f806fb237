package middleware

import "log/slog"

// Default is the chain most servers want around their commands: Log outside,
// Recover inside, both writing to logger (slog.Default() if nil). In that
// order a panic is logged in full by Recover at Error and then, as the
// *PanicError it became, in the call's one Log record like any other failure.
//
// Add RateLimit and Timeout after it, so that refusals and timeouts are
// logged too:
//
//	middleware.Chain(middleware.Default(logger), middleware.RateLimit(5, 10))
func Default(logger *slog.Logger) Middleware {
	return Chain(Log(logger), Recover(logger))
}
