//go:build !race

package load

import "time"

// ciScale is CI's run: at least 100 legacy sessions with a GET stream, 20
// subscriptions each, writes at 20/s for 20 s; and a few 2026-07-28
// sessions with a listen stream each besides.
func ciScale() scale {
	return scale{legacySessions: 100, listenSessions: 10, plan: plans[20], writesPerSecond: 20, writeFor: 20 * time.Second}
}

// raceEnabled: the test runs under the race detector, which inflates
// every allocation: TestAbandonedSessions measures but does not judge.
const raceEnabled = false

// abandonedDefault is how many sessions TestAbandonedSessions abandons.
const abandonedDefault = 500
