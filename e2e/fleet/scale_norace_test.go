//go:build !race

package fleet

import "time"

// runScale is the full run: 300 sessions of both eras, 20 subscriptions
// each, writes at 20/s for 30 s, a quarter of them straight into the
// database.
func runScale() scale {
	return scale{legacySessions: 200, listenSessions: 100, writesPerSecond: 20, writeFor: 30 * time.Second, dbEvery: 4}
}
