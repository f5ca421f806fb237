// Package otel reports what a github.com/mcplive/adapter Adapter does to
// OpenTelemetry: metrics of its reads, tools/calls, re-runs and live
// registry, and spans of its reads (with their phases), re-runs (linked to
// the writes that caused them) and notification batches.
//
// It is a module of its own, so that users of the adapter who do not want
// OpenTelemetry never inherit it. It uses only the OpenTelemetry APIs;
// the application chooses the SDK and the exporters.
//
//	tel, err := otel.New(otel.WithMeterProvider(mp), otel.WithTracerProvider(tp))
//	if err != nil { ... }
//	a := adapter.Wrap(srv, adapter.WithObserver(tel))
//	reg, err := tel.Register(a) // the registry's gauges; reg.Unregister() at shutdown
//
// # Metrics
//
// Instrument names are OpenTelemetry's (mcplive.reruns, of unit {rerun});
// OpenTelemetry's Prometheus exporter, with the translation strategy
// UnderscoreEscapingWithSuffixes and WithoutScopeInfo (as the example
// application sets them), exposes them as:
//
//	mcplive_subscriptions                   gauge    subscriptions held
//	mcplive_live_queries                    gauge    distinct queries behind them
//	mcplive_pending_notifications           gauge    notifications queued, not yet handed to a session
//	mcplive_notifications_total             counter  notifications handed to sessions
//	mcplive_reruns_total{command,outcome}   counter  re-runs: changed, unchanged, internal, late, dropped
//	mcplive_rerun_duration_seconds{command} histogram
//	mcplive_reads_total{command,outcome}    counter  reads: ok, invalid, not_found, rate_limited, internal, canceled
//	mcplive_calls_total{command,outcome}    counter  tools/calls, with the outcomes of reads
//	mcplive_rate_limited_total{command}     counter  reads and tools/calls refused by the rate limit
//	mcplive_coalesced_changes_total         counter  changes that cost a query no run of its own
//	mcplive_refused_subscriptions_total     counter  subscriptions refused
//	mcplive_command_runs_total{command,cause} counter runs of a command's function: read, call, subscribe, rerun, app
//	mcplive_kept_results                    gauge    results live queries keep to answer reads with
//	mcplive_kept_results_size_bytes         gauge    their size
//	mcplive_kept_answers_total              counter  reads and tools/calls answered from a kept result
//	mcplive_foreign_session_requests_total  counter  requests naming another identity's session
//
// mcplive_reads_total counts every read, answered from a kept result or
// not; mcplive_command_runs_total{cause="read"} counts those that ran the
// command: what the database paid for reads.
// Labels are bounded: a command's name and an outcome, never a URI, a
// session or an argument. The counts of reads, calls and re-runs are kept
// per command in atomic counters and, like the gauges (read from
// Adapter.LiveStats), observed when metrics are collected; only the re-run
// duration is recorded as it happens. A batched re-run (adapter.WithBatch)
// counts one re-run per argument set, as LiveStats does, all with the
// batch's outcome (internal when any set failed for a reason of the
// server's, else changed when any set notified), and one duration; a
// batch that fails as a whole (adapter.ErrBatchFailed) counts one internal
// re-run, and its argument sets, which then run one by one, one each. A
// re-run's duration is its run's (the adapter's PhaseCommand), not the
// time until the worker applied it.
//
// # Spans
//
//   - "read <command>": each read of the adapter's URIs. Its phases are
//     attributes, mcplive.phase.<parse|convert|validate|command>.duration
//     (kept in place of command when a kept result answered)
//     in seconds, or child spans with WithPhaseSpans. The command runs in
//     the read's context, so its own spans (a database query) nest under
//     the read.
//   - "rerun <command>", for a re-run that a traced write caused: a write
//     that reports its change with Adapter.ChangedContext, from a context
//     that carries a span, makes each re-run it causes a child of its span
//     and a link to it; a re-run that several writes caused is a child of
//     the first that was sampled (else of the first) and links to each,
//     up to adapter.MaxCauses. It carries the changed keys that caused it
//     (mcplive.keys), and how long the query itself ran
//     (mcplive.phase.command.duration: the span ends once the re-run is
//     applied, which for a worker's chunk of queries is after all of them
//     ran). So one trace leads from a write to the
//     notifications it caused. Other re-runs are counted and timed, not
//     traced, unless WithRootRerunSpans.
//   - "notify <command>", a child of a traced re-run whose result changed:
//     the subscriptions queued a notification (mcplive.subscribers).
//
// Spans carry mcplive.command and mcplive.outcome; an internal error or a
// late re-run sets the span's status to Error; a read that its client
// cancelled (canceled) does not. A read's URI holds its
// arguments, which may be personal data: it is recorded (mcp.resource.uri)
// only with WithResourceURIs. A tools/call has no span of its own here:
// mcp-go's tracing makes one where it is installed.
//
// # Cost
//
// An operation that is not sampled costs its count, and for a re-run its
// duration: under a microsecond. A sampled span costs the SDK a few
// microseconds, which matters beside a read served in process in 70 µs;
// sample traces as a busy server does (a ratio of the root spans, and
// ParentBased). docs/observability.md has the measurements.
package otel
