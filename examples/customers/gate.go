package main

import (
	"context"
	"database/sql"
	"runtime"

	"github.com/mcplive/adapter/middleware"
)

// The read gate: agents' reads wait their turn before they reach the
// database, so that writes and live re-runs do not wait behind them.
//
// Every query waits for a connection of the pool, and database/sql hands
// a freed connection to a waiter at random. An in-memory database has one
// connection: with a thousand agents re-reading what they were told
// changed, a write, and then each re-run that tells the subscribers about
// it, waited behind about as many reads as there were waiting, seconds
// under load. Behind the gate the pool sees at most a few reads waiting
// at once; the others wait at the gate, in the order they came, and cost
// nothing while they wait. Writes (the tools that are not live) and
// re-runs (origin Live) pass the gate, as do the application's own calls.

// readGate lets at most n calls of agents (origin Agent: reads, the first
// runs of subscriptions, tool calls of live commands) run at once, first
// come first served; calls of the commands named in writes, and of other
// origins, pass. A call whose context ends while it waits fails with the
// context's error. n < 1 gates nothing.
func readGate(n int, writes ...string) middleware.Middleware {
	if n < 1 {
		return func(next middleware.Handler) middleware.Handler { return next }
	}
	// A channel's waiting senders are served in order.
	slots := make(chan struct{}, n)
	passes := make(map[string]bool, len(writes))
	for _, w := range writes {
		passes[w] = true
	}
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			if call.Origin != middleware.Agent || passes[call.Command] {
				return next(ctx, call)
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			defer func() { <-slots }()
			return next(ctx, call)
		}
	}
}

// gateSize is how many agents' reads may run at once on db: twice its
// connections, so that the pool always has the next read waiting, or
// eight per CPU when the pool has no bound (a file, where SQLite lets
// readers run side by side).
func gateSize(db *sql.DB) int {
	if n := db.Stats().MaxOpenConnections; n > 0 {
		return 2 * n
	}
	return 8 * runtime.GOMAXPROCS(0)
}
