//go:build race

package fleet

import "time"

// runScale under the race detector is smaller: the detector slows every
// goroutine of the test several times over, and of the instances too when
// they are built with GOFLAGS=-race, which then checks the servers under
// the kill as well. The patterns stay the same: sticky GET streams,
// balanced listen streams and reads, writes through every instance and
// straight into the database, one instance killed halfway (each customer
// changes every 12 s).
func runScale() scale {
	return scale{legacySessions: 12, listenSessions: 6, writesPerSecond: 5, writeFor: 10 * time.Second, dbEvery: 4}
}
