package loadkit

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// problemsKept bounds how many problems a failing run prints: the first
// ones say what went wrong, the count says how much.
const problemsKept = 20

// Problems collects what went wrong anywhere in a run, from any
// goroutine: a failed request, a notification nobody asked for, an error
// a client's transport logged. Any problem fails the test. What a run
// explains by what it did on purpose (an instance it killed) is no
// problem, and is counted apart (Excused). The zero value is ready.
type Problems struct {
	// Closing is set when the test starts closing the clients: from then
	// on what their transports log is not a problem of the run (see
	// TransportLogger).
	Closing atomic.Bool
	// Excused counts what went wrong by the run's own doing.
	Excused atomic.Int64

	mu   sync.Mutex
	n    int
	kept []string
}

// Add records a problem, formatted as fmt.Sprintf does.
func (p *Problems) Add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.kept) < problemsKept {
		p.kept = append(p.kept, fmt.Sprintf(format, args...))
	}
}

// Count is how many problems were added.
func (p *Problems) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Report fails t with the problems, if there were any.
func (p *Problems) Report(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return
	}
	t.Errorf("%d problems during the run; the first %d:\n  %s", p.n, len(p.kept), strings.Join(p.kept, "\n  "))
}

// TransportLogger returns the logger for one client's mcp-go transport:
// what it logs at Error level while the run is on (a GET stream that
// failed and will be retried, an event it could not parse) is a problem
// that client saw, unless excused (nil for never) takes the line as the
// run's own doing. Below that level it is quiet, and so it is once the
// clients close: mcp-go may then log "SSE stream error: context canceled"
// for a stream it is closing itself (its reader checks its own context,
// which the cancellation reaches just after the HTTP body failed).
func (p *Problems) TransportLogger(client string, excused func(line string) bool) *slog.Logger {
	return slog.New(slog.NewTextHandler(problemWriter{p: p, client: client, excused: excused}, &slog.HandlerOptions{Level: slog.LevelError}))
}

// problemWriter turns each record of a text handler (one Write each) into
// a problem.
type problemWriter struct {
	p       *Problems
	client  string
	excused func(line string) bool
}

func (w problemWriter) Write(b []byte) (int, error) {
	line := strings.TrimSpace(string(b))
	switch {
	case w.p.Closing.Load():
	case w.excused != nil && w.excused(line):
		w.p.Excused.Add(1)
	default:
		w.p.Add("%s: its transport logged: %s", w.client, line)
	}
	return len(b), nil
}
