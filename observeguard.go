package adapter

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// An Observer's panics.
//
// The adapter calls its Observer on request goroutines and on its own
// re-run workers, where a panic would end the process. An Observer is the
// user's code like a command (userpanic.go), and a broken one must cost
// what it observes nothing: each of its calls that panics is logged at
// Error and counts as not made; an Observe that panics observes nothing.

// guardedObserver is the Observer WithObserver installs around the user's.
type guardedObserver struct {
	o     Observer
	guard *observerGuard
}

// observerGuard logs an Observer's panics: the first with its stack, the
// others without, since a broken Observer panics on every operation.
type observerGuard struct {
	logger  *slog.Logger
	stacked atomic.Bool
}

func (g *observerGuard) recovered(method string, op OpKind, command string) {
	v := recover()
	if v == nil {
		return
	}
	attrs := []slog.Attr{slog.String("method", method), slog.String("op", op.String()),
		slog.String("command", command), slog.Any("panic", v)}
	if g.stacked.CompareAndSwap(false, true) {
		attrs = append(attrs, slog.String("stack", string(debug.Stack())))
	}
	logger := g.logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.LogAttrs(context.Background(), slog.LevelError, "adapter: Observer panicked", attrs...)
}

func (g guardedObserver) Observe(ctx context.Context, op Op) (context.Context, Observation) {
	octx, o := g.observe(ctx, op)
	if o == nil {
		return ctx, noObservation{}
	}
	return octx, guardedObservation{o: o, guard: g.guard, op: op.Kind, command: op.Command}
}

func (g guardedObserver) observe(ctx context.Context, op Op) (octx context.Context, o Observation) {
	defer g.guard.recovered("Observe", op.Kind, op.Command)
	octx, o = g.o.Observe(ctx, op)
	if octx == nil {
		octx = ctx
	}
	return octx, o
}

// guardedObservation is an Observation of the user's Observer, each call
// guarded.
type guardedObservation struct {
	o       Observation
	guard   *observerGuard
	op      OpKind
	command string
}

func (g guardedObservation) Phase(name string, start, end time.Time) {
	defer g.guard.recovered("Phase", g.op, g.command)
	g.o.Phase(name, start, end)
}

func (g guardedObservation) End(outcome Outcome, err error) {
	defer g.guard.recovered("End", g.op, g.command)
	g.o.End(outcome, err)
}

// noObservation is what an Observe that panicked, or returned none,
// observes: nothing.
type noObservation struct{}

func (noObservation) Phase(string, time.Time, time.Time) {}
func (noObservation) End(Outcome, error)                 {}
