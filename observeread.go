package adapter

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/middleware"
)

// The observed paths of reads and tools/calls, taken only when an Observer
// is set (observe.go): the plain paths in read.go and tool.go stay as they
// were.

// readClock is when the phases of a read that routeRead runs began and
// ended: the parse from start to parsed, the conversion from parsed to
// converted. A zero time is a phase that did not run.
type readClock struct {
	start, parsed, converted time.Time
}

// observePhases reports the phases routeRead ran.
func (k *readClock) observePhases(o Observation) {
	if k.parsed.IsZero() {
		return
	}
	o.Phase(PhaseParse, k.start, k.parsed)
	if !k.converted.IsZero() {
		o.Phase(PhaseConvert, k.parsed, k.converted)
	}
}

// observeUnrouted observes a read that routeRead answers by itself, as
// resource-not-found: a URI that does not fit its template, or a command
// the session is not granted.
func (a *Adapter) observeUnrouted(ctx context.Context, st *readState) {
	start := st.clock.start
	if start.IsZero() {
		start = time.Now()
	}
	_, o := a.cfg.observer.Observe(ctx, Op{Kind: OpRead, Command: st.cmd.name, URI: st.uri, Start: start})
	st.clock.observePhases(o)
	o.End(OutcomeNotFound, st.err)
}

// readObserved is readHandler with an Observer: the same steps, with the
// validation and the command timed apart.
func (a *Adapter) readObserved(ctx context.Context, c *command, st *readState) ([]mcp.ResourceContents, error) {
	ctx, o := a.cfg.observer.Observe(ctx, Op{Kind: OpRead, Command: c.name, URI: st.uri, Start: st.clock.start})
	st.clock.observePhases(o)
	if st.err != nil {
		o.End(outcomeOf(st.err), st.err)
		return nil, a.readError(ctx, c, st.uri, st.err)
	}
	began := time.Now()
	args, err := c.decode(st.args)
	validated := time.Now()
	o.Phase(PhaseValidate, began, validated)
	var contents []mcp.ResourceContents
	if err == nil {
		var res any
		res, err = c.invokeDecoded(ctx, middleware.Agent, args, st.args)
		o.Phase(PhaseCommand, validated, time.Now())
		if err == nil {
			contents, err = readContents(st, res)
		}
	}
	o.End(requestOutcome(ctx, err), err)
	if err != nil {
		return nil, a.readError(ctx, c, st.uri, err)
	}
	return contents, nil
}
