package otel

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplive/adapter"
)

// What each command's spans and measurements need, and its counts.
//
// An operation costs its command a lookup and an atomic add: the counts
// of reads, calls and re-runs by outcome are kept here and observed when
// metrics are collected (instruments.observe), rather than added to the
// SDK's synchronous counters one by one, which costs a re-run of a small
// query a noticeable share of its time.

// The outcomes counted, in the order of a command's counts; any outcome
// the adapter may add later is counted as "other".
const numOutcomes = 11

func outcomeIndex(o adapter.Outcome) int {
	switch o {
	case adapter.OutcomeOK:
		return 0
	case adapter.OutcomeInvalid:
		return 1
	case adapter.OutcomeNotFound:
		return 2
	case adapter.OutcomeRateLimited:
		return 3
	case adapter.OutcomeInternal:
		return 4
	case adapter.OutcomeChanged:
		return 5
	case adapter.OutcomeUnchanged:
		return 6
	case adapter.OutcomeLate:
		return 7
	case adapter.OutcomeDropped:
		return 8
	case adapter.OutcomeCanceled:
		return 9
	}
	return 10
}

func outcomeName(i int) string {
	names := [numOutcomes]adapter.Outcome{
		adapter.OutcomeOK, adapter.OutcomeInvalid, adapter.OutcomeNotFound, adapter.OutcomeRateLimited,
		adapter.OutcomeInternal, adapter.OutcomeChanged, adapter.OutcomeUnchanged, adapter.OutcomeLate,
		adapter.OutcomeDropped, adapter.OutcomeCanceled, "other",
	}
	return string(names[i])
}

// counts are a command's operations of one kind, by outcome index.
type counts [numOutcomes]atomic.Int64

func (c *counts) add(o adapter.Outcome) { c[outcomeIndex(o)].Add(1) }

// command is one command's span names and attributes, made once, and its
// counts.
type command struct {
	name                string
	read, rerun, notify string // span names
	attr                attribute.KeyValue
	attrOnly            trace.SpanStartOption    // attr, as a span start option
	only                metric.MeasurementOption // the label {command}
	// labels are {command, outcome} by outcome index.
	labels [numOutcomes]metric.MeasurementOption

	reads, calls, reruns counts
	rateLimited          atomic.Int64
}

func newCommand(name string) *command {
	c := &command{
		name: name, read: "read " + name, rerun: "rerun " + name, notify: "notify " + name,
		attr:     attribute.String("mcplive.command", name),
		attrOnly: trace.WithAttributes(attribute.String("mcplive.command", name)),
		only:     metric.WithAttributeSet(attribute.NewSet(attribute.String(labelCommand, name))),
	}
	for i := range c.labels {
		c.labels[i] = metric.WithAttributeSet(attribute.NewSet(
			attribute.String(labelCommand, name),
			attribute.String(labelOutcome, outcomeName(i)),
		))
	}
	return c
}

// commands finds a command by name. The names are a small set, fixed once
// the server serves: a map that is copied when a name is added and read
// without a lock.
type commands struct {
	byName atomic.Pointer[map[string]*command]
	mu     sync.Mutex // serializes additions
}

func (cs *commands) get(name string) *command {
	if m := cs.byName.Load(); m != nil {
		if c, ok := (*m)[name]; ok {
			return c
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := cs.byName.Load()
	if old != nil {
		if c, ok := (*old)[name]; ok {
			return c
		}
	}
	m := make(map[string]*command, 1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	c := newCommand(name)
	m[name] = c
	cs.byName.Store(&m)
	return c
}

// each calls fn for every command seen so far.
func (cs *commands) each(fn func(*command)) {
	if m := cs.byName.Load(); m != nil {
		for _, c := range *m {
			fn(c)
		}
	}
}
