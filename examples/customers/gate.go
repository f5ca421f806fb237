package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
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

// gateReads lets at most n resources/read requests at a time into next,
// first come first served; every other request passes. serveHTTP lets in
// four times as many as the read gate lets run (gateSize), so that the
// transport always has the next reads decoded and waiting there. A read waits here
// before anything but its first bytes is read: with its connection and a
// goroutine of net/http, but none of what the transport holds for a
// request it serves (mcp-go makes a channel of 100 notifications and a
// goroutine for each legacy POST), nor a place at the read gate. A
// thousand sessions re-reading at once held a few hundred megabytes that
// way. A read whose client goes away while it waits is dropped.
func gateReads(n int, next http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || requestMethod(r) != "resources/read" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-slots }()
		next.ServeHTTP(w, r)
	})
}

// methodPeek bounds how much of a request gateReads reads to find its
// method.
const methodPeek = 4 << 10

// requestMethod returns the JSON-RPC method of r's body, as far as its
// first methodPeek bytes tell ("" when they do not), and leaves the body
// whole for the handler.
func requestMethod(r *http.Request) string {
	size := int64(methodPeek)
	if r.ContentLength >= 0 && r.ContentLength < size {
		size = r.ContentLength
	}
	peek := make([]byte, size)
	n, err := io.ReadFull(r.Body, peek)
	peek = peek[:n]
	var rest io.Reader = r.Body
	if err != nil {
		rest = errReader{err} // the handler meets the error where it read
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			rest = http.NoBody
		}
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(peek), rest), r.Body}
	return jsonMethod(peek)
}

// jsonMethod returns the string value of the top-level "method" of msg, a
// JSON object or the start of one; "" when msg shows none.
func jsonMethod(msg []byte) string {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "method" {
			method, _ := dec.Token()
			s, _ := method.(string)
			return s
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

type readCloser struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
