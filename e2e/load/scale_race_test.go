//go:build race

package load

import "time"

// ciScale under the race detector is smaller: the detector slows every
// goroutine of the test several times over, and of the example too when
// it is built with GOFLAGS=-race, which then checks the server under load
// as well. The patterns stay the same: GET streams written while their
// sessions POST, listen streams, writes at a steady rate (each customer
// changes every 12 s).
func ciScale() scale {
	return scale{legacySessions: 20, listenSessions: 4, plan: plans[20], writesPerSecond: 5, writeFor: 10 * time.Second}
}

// raceEnabled: the test runs under the race detector, which inflates
// every allocation: TestAbandonedSessions measures but does not judge.
const raceEnabled = true

// abandonedDefault is how many sessions TestAbandonedSessions abandons.
const abandonedDefault = 50
