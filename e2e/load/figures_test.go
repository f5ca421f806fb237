package load

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// figures are what a run measured.
type figures struct {
	legacySessions, listenSessions int
	subscriptions                  int
	writes                         int
	writeTimes                     writeTimes
	notifications, rereads         int
	// latencies are, for customers_show subscriptions, from the start of
	// the oldest write a notification answers to its arrival.
	latencies []time.Duration
	// stale subscriptions ended with a last read that differs from the
	// truth; behind of them had a notification whose re-read had not
	// finished (slow), the rest were never told (lost).
	stale, behind int
	// unannounced counts, over customers_show subscriptions, the writes
	// of the customer that no notification announced before its next
	// write (or the final check).
	unannounced int
	problems    int
	// load is the span from the first write's start to the final check;
	// serverCPU and clientsCPU the CPU time the example and this process
	// spent in it, on cores cores.
	// others is what the machine's other processes spent meanwhile.
	load                          time.Duration
	serverCPU, clientsCPU, others time.Duration
	cores                         int
	// peakRSS is the example's peak resident memory, since it started.
	peakRSS int64
	// server is what the example's metrics counted over the load.
	server serverCounts
}

// serverCounts are the example's own counts over the load: the reads it
// answered (mcplive_reads_total), the command runs they cost
// (mcplive_command_runs_total{cause="read"}: the others were answered from
// kept results) and the re-runs (cause="rerun").
type serverCounts struct {
	reads, readRuns, reruns float64
}

// serverCountsOf is what the example counted between two scrapes.
func serverCountsOf(before, after loadkit.Metrics) serverCounts {
	delta := func(name string, labels ...string) float64 {
		return after.Sum(name, labels...) - before.Sum(name, labels...)
	}
	return serverCounts{
		reads:    delta("mcplive_reads_total"),
		readRuns: delta("mcplive_command_runs_total", "cause=read"),
		reruns:   delta("mcplive_command_runs_total", "cause=rerun"),
	}
}

// summary is the run on one line, for CI logs.
func (f figures) summary() string {
	sorted := slices.Sorted(slices.Values(f.latencies))
	wt := f.writeTimes
	return fmt.Sprintf("e2e/load: sessions=%d (2025-11-25 GET stream %d, 2026-07-28 listen %d) subscriptions=%d "+
		"writes=%d (asked %.1f/s over %.1fs, done %.1f/s) notifications=%d rereads=%d "+
		"write-start-to-notification p50=%v p99=%v max=%v (n=%d) stale=%d (behind %d, never told %d) unannounced=%d problems=%d "+
		"cpu=server %.0f%% clients %.0f%% others %.0f%% of %d%% over %.1fs server-peak-rss=%dMB "+
		"server-reads=%.0f ran-the-command=%.0f (%.1f%%) reruns=%.0f",
		f.legacySessions+f.listenSessions, f.legacySessions, f.listenSessions, f.subscriptions,
		f.writes, perSecond(f.writes, wt.firstStart, wt.lastStart), wt.lastStart.Sub(wt.firstStart).Seconds(),
		perSecond(f.writes, wt.firstStart, wt.lastDone),
		f.notifications, f.rereads,
		loadkit.Ms(loadkit.Percentile(sorted, 50)), loadkit.Ms(loadkit.Percentile(sorted, 99)), loadkit.Ms(loadkit.Percentile(sorted, 100)), len(sorted),
		f.stale, f.behind, f.stale-f.behind, f.unannounced, f.problems,
		share(f.serverCPU, f.load), share(f.clientsCPU, f.load), share(f.others, f.load), 100*f.cores, f.load.Seconds(), f.peakRSS/1e6,
		f.server.reads, f.server.readRuns, 100*f.server.readRuns/max(f.server.reads, 1), f.server.reruns)
}

// share is cpu as a percentage of one core over span.
func share(cpu, span time.Duration) float64 {
	return 100 * cpu.Seconds() / max(span.Seconds(), 1e-9)
}

// latency is the p-th percentile of the write-to-notification latency.
func (f figures) latency(p float64) time.Duration {
	return loadkit.Percentile(slices.Sorted(slices.Values(f.latencies)), p)
}
