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
// Instrument names are OpenTelemetry's; OpenTelemetry's Prometheus exporter
// (with its default translation, UnderscoreEscapingWithSuffixes) exposes
// them as:
//
//	mcplive_subscriptions                   gauge    subscriptions held
//	mcplive_live_queries                    gauge    distinct queries behind them
//	mcplive_pending_notifications           gauge    notifications queued, not yet handed to a session
//	mcplive_notifications_total             counter  notifications handed to sessions
//	mcplive_reruns_total{command,outcome}   counter  re-runs: changed, unchanged, internal, late, dropped
//	mcplive_rerun_duration_seconds{command} histogram
//	mcplive_reads_total{command,outcome}    counter  reads: ok, invalid, not_found, rate_limited, internal
//	mcplive_calls_total{command,outcome}    counter  tools/calls, with the outcomes of reads
//	mcplive_rate_limited_total{command}     counter  reads and tools/calls refused by the rate limit
//	mcplive_coalesced_changes_total         counter  changes that cost a query no run of its own
//	mcplive_refused_subscriptions_total     counter  subscriptions refused
//
// Labels are bounded: a command's name and an outcome, never a URI, a
// session or an argument. The gauges and the counters without labels are
// read from Adapter.LiveStats when metrics are collected, at no cost in
// between.
//
// # Spans
//
//   - "read <command>", with a child span per phase: parse, convert,
//     validate, command. The command runs in the read's context, so its
//     own spans (a database query) nest under the read.
//   - "rerun <command>", with the changed keys that caused it
//     (mcplive.keys). A write that reports its change with
//     Adapter.ChangedContext makes the re-run a child of its span and a
//     link to it; a re-run that several writes caused links to each, up
//     to adapter.MaxCauses. So one trace leads from a write to the
//     notifications it caused.
//   - "notify <command>", a child of the re-run: the subscriptions queued
//     a notification (mcplive.subscribers).
//
// Spans carry mcplive.command and mcplive.outcome. A read's URI holds its
// arguments, which may be personal data: it is recorded (mcp.resource.uri)
// only with WithResourceURIs. A tools/call has no span of its own here:
// mcp-go's tracing (github.com/mark3labs/mcp-go/otel) makes one.
package otel
