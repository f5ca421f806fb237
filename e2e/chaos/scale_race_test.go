//go:build race

package chaos

import "time"

// runScale under the race detector is much smaller: the detector slows
// the test several times over, and the example too when it is built with
// GOFLAGS=-race, which then checks the server under the cuts as well. One
// go-sdk client on each era, 5 writes/s for 8 s, 3 s of quiet, a last
// round; no TypeScript clients, which CI installs only after the race
// pass.
func runScale() scale {
	return scale{perKind: 1, ts: false, writesPerSecond: 5, writeFor: 8 * time.Second, quietFor: 3 * time.Second}
}
