package load

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
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
}

// summary is the run on one line, for CI logs.
func (f figures) summary() string {
	sorted := slices.Sorted(slices.Values(f.latencies))
	wt := f.writeTimes
	return fmt.Sprintf("e2e/load: sessions=%d (2025-11-25 GET stream %d, 2026-07-28 listen %d) subscriptions=%d "+
		"writes=%d (asked %.1f/s over %.1fs, done %.1f/s) notifications=%d rereads=%d "+
		"write-start-to-notification p50=%v p99=%v max=%v (n=%d) stale=%d (behind %d, never told %d) unannounced=%d problems=%d "+
		"cpu=server %.0f%% clients %.0f%% others %.0f%% of %d%% over %.1fs server-peak-rss=%dMB",
		f.legacySessions+f.listenSessions, f.legacySessions, f.listenSessions, f.subscriptions,
		f.writes, perSecond(f.writes, wt.firstStart, wt.lastStart), wt.lastStart.Sub(wt.firstStart).Seconds(),
		perSecond(f.writes, wt.firstStart, wt.lastDone),
		f.notifications, f.rereads,
		ms(percentile(sorted, 50)), ms(percentile(sorted, 99)), ms(percentile(sorted, 100)), len(sorted),
		f.stale, f.behind, f.stale-f.behind, f.unannounced, f.problems,
		share(f.serverCPU, f.load), share(f.clientsCPU, f.load), share(f.others, f.load), 100*f.cores, f.load.Seconds(), f.peakRSS/1e6)
}

// share is cpu as a percentage of one core over span.
func share(cpu, span time.Duration) float64 {
	return 100 * cpu.Seconds() / max(span.Seconds(), 1e-9)
}

// latency is the p-th percentile of the write-to-notification latency.
func (f figures) latency(p float64) time.Duration {
	return percentile(slices.Sorted(slices.Values(f.latencies)), p)
}

// ms rounds d for printing.
func ms(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value that at least p% of the values
// do not exceed. It is 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted)) * p / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func TestPercentile(t *testing.T) {
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"none", nil, 50, 0},
		{"one value is every percentile", []time.Duration{7}, 99, 7},
		{"median of ten is the fifth", ten, 50, 5},
		{"p99 of ten is the largest", ten, 99, 10},
		{"p100 is the largest", ten, 100, 10},
		{"tiny p is the smallest", ten, 0.1, 1},
		{"p99 of a hundred is the 99th", hundred, 99, 99},
		{"p50 of a hundred is the 50th", hundred, 50, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}
