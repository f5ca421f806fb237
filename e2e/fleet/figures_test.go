package fleet

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// figures are what a run measured.
type figures struct {
	feed                           string // the instances' -feed
	feeds                          feedState
	instances                      int
	legacySessions, listenSessions int
	subscriptions                  int
	writes                         writeCounts
	notifications, rereads         int
	// latencies are, for customers_show subscriptions, from the start of
	// the oldest write a notification answers to its arrival.
	latencies []time.Duration
	// beforeKill are those of notifications that arrived before the kill.
	beforeKill []time.Duration
	// The killed instance's clients: legacy sessions that lived there
	// (newSessions of them had to start a new one) and listen clients
	// whose stream did; subscribedAgain is, for each, from the kill to
	// when it was subscribed again, back to when it had also re-read
	// every URI.
	killedLegacy, killedListen, newSessions int
	subscribedAgain, back                   []time.Duration
	backLegacy, backListen                  []time.Duration // back, by era
	// retries are reads that the kill cut and the client read again;
	// excused counts every error the kill explains (those reads, failed
	// reconnection attempts, mcp-go's logs of a failed GET stream).
	retries int
	excused int64
	// unexplained lists the legacy sessions on surviving instances that
	// had reads fail: the kill does not explain those.
	unexplained []string
	// converged is from the last write's return to every subscription
	// holding the final state; stale subscriptions did not by the bound,
	// behind of them had a notification whose re-read had not finished.
	converged     time.Duration
	stale, behind int
	// unannounced counts, over the customers_show subscriptions of clients
	// that never lost their connection, the writes of the customer that no
	// notification announced before its next write (or the final check).
	unannounced int
	problems    int
	// named counts the versions the killed instance's listen clients
	// named when they listened again on another instance, announced the
	// notifications that came at once: one for each URI whose result
	// differed from the one named.
	named, announced int
}

// summary is the run on one line, for CI logs.
func (f figures) summary() string {
	sorted := slices.Sorted(slices.Values(f.latencies))
	steady := slices.Sorted(slices.Values(f.beforeKill))
	back := slices.Sorted(slices.Values(f.back))
	again := slices.Sorted(slices.Values(f.subscribedAgain))
	backLegacy := slices.Sorted(slices.Values(f.backLegacy))
	backListen := slices.Sorted(slices.Values(f.backListen))
	return fmt.Sprintf("e2e/fleet: feed=%s instances=%d (1 killed) sessions=%d (2025-11-25 GET stream %d, 2026-07-28 listen %d) subscriptions=%d "+
		"writes=%d (through instances %d, straight to the database %d; %.1f/s over %.1fs) notifications=%d rereads=%d "+
		"write-start-to-notification p50=%v p99=%v max=%v (n=%d; before the kill p50=%v p99=%v) "+
		"killed instance's clients=%d (legacy %d, %d of them in a new session; listen %d) after the kill subscribed again p50=%v max=%v, back (every URI re-read) p50=%v max=%v (legacy p50=%v, listen p50=%v) "+
		"listening again named %d versions, announced at once %d "+
		"converged after the last write in %v stale=%d (behind %d, never told %d) unannounced=%d retried reads=%d excused errors=%d problems=%d %s",
		f.feed, f.instances, f.legacySessions+f.listenSessions, f.legacySessions, f.listenSessions, f.subscriptions,
		f.writes.viaInstance+f.writes.viaDB, f.writes.viaInstance, f.writes.viaDB,
		float64(f.writes.viaInstance+f.writes.viaDB-1)/max(f.writes.span.Seconds(), 1e-9), f.writes.span.Seconds(),
		f.notifications, f.rereads,
		loadkit.Ms(loadkit.Percentile(sorted, 50)), loadkit.Ms(loadkit.Percentile(sorted, 99)), loadkit.Ms(loadkit.Percentile(sorted, 100)), len(sorted),
		loadkit.Ms(loadkit.Percentile(steady, 50)), loadkit.Ms(loadkit.Percentile(steady, 99)),
		f.killedLegacy+f.killedListen, f.killedLegacy, f.newSessions, f.killedListen,
		loadkit.Ms(loadkit.Percentile(again, 50)), loadkit.Ms(loadkit.Percentile(again, 100)), loadkit.Ms(loadkit.Percentile(back, 50)), loadkit.Ms(loadkit.Percentile(back, 100)),
		loadkit.Ms(loadkit.Percentile(backLegacy, 50)), loadkit.Ms(loadkit.Percentile(backListen, 50)),
		f.named, f.announced,
		loadkit.Ms(f.converged), f.stale, f.behind, f.stale-f.behind, f.unannounced, f.retries, f.excused, f.problems, f.feeds)
}

// latency is the p-th percentile of the write-to-notification latency.
func (f figures) latency(p float64) time.Duration {
	return loadkit.Percentile(slices.Sorted(slices.Values(f.latencies)), p)
}
