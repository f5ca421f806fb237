package fleet

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

// problems collects what went wrong anywhere in the run, from any
// goroutine: a failed request, a notification nobody asked for, an error
// a client's transport logged. Any problem fails the test. What the kill
// explains is no problem, and is counted apart (excused).
type problems struct {
	// closing is set when the test starts closing the clients: from then
	// on what their transports log is not a problem of the run (see
	// transportLogger).
	closing atomic.Bool
	// excused counts errors the clients of the killed instance saw, or
	// requests in flight on it when it died: the kill's cost, not a fault.
	excused atomic.Int64

	mu   sync.Mutex
	n    int
	kept []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.kept) < problemsKept {
		p.kept = append(p.kept, fmt.Sprintf(format, args...))
	}
}

func (p *problems) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// report fails t with the problems, if there were any.
func (p *problems) report(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return
	}
	t.Errorf("%d problems during the run; the first %d:\n  %s", p.n, len(p.kept), strings.Join(p.kept, "\n  "))
}

// transportLogger returns the logger for one client's mcp-go transport:
// what it logs at Error level while the run is on (a GET stream that
// failed and will be retried, an event it could not parse) is a problem
// that client saw, unless excused takes it as the kill's doing (a stream
// through the killed instance that broke).
// Below that level it is quiet, and so it is once the clients close:
// mcp-go v1.2.1 may then log "SSE stream error: context canceled" for a
// stream it is closing itself.
func (p *problems) transportLogger(client string, excused func(line string) bool) *slog.Logger {
	return slog.New(slog.NewTextHandler(problemWriter{p: p, client: client, excused: excused}, &slog.HandlerOptions{Level: slog.LevelError}))
}

// problemWriter turns each record of a text handler (one Write each) into
// a problem.
type problemWriter struct {
	p       *problems
	client  string
	excused func(line string) bool
}

func (w problemWriter) Write(b []byte) (int, error) {
	switch {
	case w.p.closing.Load():
	case w.excused != nil && w.excused(strings.TrimSpace(string(b))):
		w.p.excused.Add(1)
	default:
		w.p.add("%s: its transport logged: %s", w.client, strings.TrimSpace(string(b)))
	}
	return len(b), nil
}
