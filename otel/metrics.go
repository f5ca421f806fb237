package otel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"

	"github.com/mcplive/adapter"
)

// The labels of the measurements: a bounded set of values each.
const (
	labelCommand = "command"
	labelOutcome = "outcome"
	labelCause   = "cause"
)

// instruments are the metrics of package otel (see the package doc for
// their Prometheus names). Units in braces are annotations, which the
// Prometheus exporter leaves out of names; "s" becomes _seconds.
type instruments struct {
	meter metric.Meter

	// Counted per command (commands.go), observed at collection.
	reads, calls, reruns, rateLimited metric.Int64ObservableCounter
	rerunDuration                     metric.Float64Histogram

	// Read from Adapter.LiveStats and Adapter.CommandRuns at each
	// collection (Register).
	subscriptions, queries, pending    metric.Int64ObservableGauge
	notifications, coalesced, refusals metric.Int64ObservableCounter
	kept, keptBytes                    metric.Int64ObservableGauge
	keptAnswers, commandRuns           metric.Int64ObservableCounter
	foreignSessionRequests             metric.Int64ObservableCounter

	// counted is the callback that observes the counts. Unregistering
	// what Register returns unregisters it too: until then the meter
	// provider holds the Telemetry, and reports its counts.
	counted metric.Registration
}

func (in *instruments) init(m metric.Meter, each func(func(*command))) error {
	in.meter = m
	var errs [16]error
	in.reads, errs[0] = m.Int64ObservableCounter("mcplive.reads", metric.WithUnit("{read}"),
		metric.WithDescription("Reads of the adapter's resource URIs, by command and outcome."))
	in.calls, errs[1] = m.Int64ObservableCounter("mcplive.calls", metric.WithUnit("{call}"),
		metric.WithDescription("tools/calls of the adapter's commands, by command and outcome."))
	in.reruns, errs[2] = m.Int64ObservableCounter("mcplive.reruns", metric.WithUnit("{rerun}"),
		metric.WithDescription("Re-runs of live queries after a change, by command and outcome."))
	in.rateLimited, errs[3] = m.Int64ObservableCounter("mcplive.rate_limited", metric.WithUnit("{call}"),
		metric.WithDescription("Reads and tools/calls refused by the rate limit, by command."))
	in.rerunDuration, errs[4] = m.Float64Histogram("mcplive.rerun.duration", metric.WithUnit("s"),
		metric.WithDescription("How long re-runs of live queries took, by command."),
		// A re-run is a query: from a fraction of a millisecond to the
		// default deadline of 30 s.
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
	in.subscriptions, errs[5] = m.Int64ObservableGauge("mcplive.subscriptions", metric.WithUnit("{subscription}"),
		metric.WithDescription("Subscriptions held, on every connection."))
	in.queries, errs[6] = m.Int64ObservableGauge("mcplive.live_queries", metric.WithUnit("{query}"),
		metric.WithDescription("Distinct live queries (command and arguments) behind the subscriptions."))
	in.pending, errs[7] = m.Int64ObservableGauge("mcplive.pending_notifications", metric.WithUnit("{notification}"),
		metric.WithDescription("Notifications queued and not yet handed to a session."))
	in.notifications, errs[8] = m.Int64ObservableCounter("mcplive.notifications", metric.WithUnit("{notification}"),
		metric.WithDescription("notifications/resources/updated handed to sessions."))
	in.coalesced, errs[9] = m.Int64ObservableCounter("mcplive.coalesced_changes", metric.WithUnit("{change}"),
		metric.WithDescription("Changes that cost a live query no run of its own: it was queued already, or running with one more run owed."))
	in.refusals, errs[10] = m.Int64ObservableCounter("mcplive.refused_subscriptions", metric.WithUnit("{subscription}"),
		metric.WithDescription("Subscriptions refused: no such live command, not granted, not converting, over a cap, rate limited, or closing."))
	in.kept, errs[12] = m.Int64ObservableGauge("mcplive.kept_results", metric.WithUnit("{result}"),
		metric.WithDescription("Results that live queries keep to answer reads with."))
	in.keptBytes, errs[13] = m.Int64ObservableGauge("mcplive.kept_results.size", metric.WithUnit("By"),
		metric.WithDescription("The size of the results kept, within the adapter's budget."))
	in.keptAnswers, errs[14] = m.Int64ObservableCounter("mcplive.kept_answers", metric.WithUnit("{read}"),
		metric.WithDescription("Reads and tools/calls answered from a kept result, without running their command."))
	in.commandRuns, errs[15] = m.Int64ObservableCounter("mcplive.command_runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs of each command's function, by cause: read, call, subscribe, rerun, app. What the commands cost the data they read."))
	in.foreignSessionRequests, errs[11] = m.Int64ObservableCounter("mcplive.foreign_session_requests", metric.WithUnit("{request}"),
		metric.WithDescription("HTTP requests answered as for an unknown session: they named a session that another identity opened."))
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	var err error
	in.counted, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		each(in.observe(o))
		return nil
	}, in.reads, in.calls, in.reruns, in.rateLimited)
	return err
}

// observe returns what observes one command's counts: every series that
// counted something.
func (in *instruments) observe(o metric.Observer) func(*command) {
	return func(c *command) {
		for i := range numOutcomes {
			for _, k := range []struct {
				inst metric.Int64Observable
				n    int64
			}{{in.reads, c.reads[i].Load()}, {in.calls, c.calls[i].Load()}, {in.reruns, c.reruns[i].Load()}} {
				if k.n > 0 {
					o.ObserveInt64(k.inst, k.n, c.labels[i])
				}
			}
		}
		if n := c.rateLimited.Load(); n > 0 {
			o.ObserveInt64(in.rateLimited, n, c.only)
		}
	}
}

// rerunEnded counts a re-run of c, of n queries, that ended with outcome
// and err, began at start and ran until ran (now, when the adapter did not
// say), and records its duration.
func (in *instruments) rerunEnded(ctx context.Context, c *command, outcome adapter.Outcome, err error, start, ran time.Time, n int64) {
	if errors.Is(err, adapter.ErrBatchFailed) {
		// The call failed as a whole and its n argument sets re-run one
		// by one, each counted then: the call is one failure, not n
		// re-runs (LiveStats counts none).
		n = 1
	}
	c.reruns[outcomeIndex(outcome)].Add(n)
	if ran.IsZero() {
		ran = time.Now()
	}
	in.rerunDuration.Record(ctx, ran.Sub(start).Seconds(), c.only)
}

// Register reports the live registry of a (Adapter.LiveStats) through the
// observable instruments: subscriptions, live queries and pending
// notifications as gauges, notifications, coalesced changes, refused
// subscriptions and requests naming another identity's session as
// counters. They are read when metrics are collected, at
// no cost in between. Unregister the result when a is closed: that ends
// every series the Telemetry observes, the counts of reads, calls and
// re-runs too, and lets the meter provider forget it. A Telemetry
// registers one adapter; a second call is an error.
func (t *Telemetry) Register(a *adapter.Adapter) (metric.Registration, error) {
	if a == nil {
		return nil, errors.New("otel: Register: nil Adapter")
	}
	if !t.registered.CompareAndSwap(false, true) {
		return nil, errors.New("otel: Register: this Telemetry has an Adapter already; make one Telemetry per Adapter")
	}
	in := &t.inst
	reg, err := in.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := a.LiveStats()
		o.ObserveInt64(in.subscriptions, int64(s.Subscriptions))
		o.ObserveInt64(in.queries, int64(s.Queries))
		o.ObserveInt64(in.pending, int64(s.Pending))
		o.ObserveInt64(in.notifications, clampInt64(s.Notified))
		o.ObserveInt64(in.coalesced, clampInt64(s.Coalesced))
		o.ObserveInt64(in.refusals, clampInt64(s.Refused))
		o.ObserveInt64(in.kept, int64(s.Kept))
		o.ObserveInt64(in.keptBytes, int64(s.KeptBytes))
		o.ObserveInt64(in.keptAnswers, clampInt64(s.KeptAnswers))
		o.ObserveInt64(in.foreignSessionRequests, clampInt64(s.ForeignSessionRequests))
		in.observeRuns(o, a.CommandRuns())
		return nil
	}, in.subscriptions, in.queries, in.pending, in.notifications, in.coalesced, in.refusals,
		in.kept, in.keptBytes, in.keptAnswers, in.commandRuns, in.foreignSessionRequests)
	if err != nil {
		t.registered.Store(false)
		return nil, err
	}
	return registrations{regs: [2]metric.Registration{reg, in.counted}}, nil
}

// observeRuns observes the command runs of each command, a series per
// cause that counted something.
func (in *instruments) observeRuns(o metric.Observer, runs []adapter.CommandRuns) {
	for _, r := range runs {
		for _, k := range [...]struct {
			cause string
			n     uint64
		}{{"read", r.Read}, {"call", r.Call}, {"subscribe", r.Subscribe}, {"rerun", r.Rerun}, {"app", r.App}} {
			if k.n > 0 {
				o.ObserveInt64(in.commandRuns, clampInt64(k.n), metric.WithAttributes(
					attribute.String(labelCommand, r.Command), attribute.String(labelCause, k.cause)))
			}
		}
	}
}

// registrations unregisters the registry's callback and the counts'.
type registrations struct {
	embedded.Registration // as the metric API asks of implementations
	regs                  [2]metric.Registration
}

func (r registrations) Unregister() error {
	return errors.Join(r.regs[0].Unregister(), r.regs[1].Unregister())
}

func clampInt64(n uint64) int64 {
	if n > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(n)
}
