package fleet

import "time"

// A scale is the size of one run.
type scale struct {
	// legacySessions hold a GET stream on 2025-11-25; listenSessions
	// subscribe with subscriptions/listen on 2026-07-28. Each watches
	// subsPerSession URIs.
	legacySessions, listenSessions int
	// writesPerSecond for writeFor; every dbEvery-th straight into the
	// database.
	writesPerSecond int
	writeFor        time.Duration
	dbEvery         int
}

// writes is how many writes the run makes.
func (s scale) writes() int { return s.writesPerSecond * int(s.writeFor/time.Second) }

// sessions is how many subscribing sessions the run opens.
func (s scale) sessions() int { return s.legacySessions + s.listenSessions }

// killAt is the write before which an instance is killed: halfway.
func (s scale) killAt() int { return s.writes() / 2 }

// smallScale is the run under the race detector, and the run of the feed
// that CI does not run at full size (TestFleet): the same patterns, sticky
// GET streams, balanced listen streams and reads, writes through every
// instance and straight into the database, one instance killed halfway
// (each customer changes every 12 s), with fewer clients and writes.
func smallScale() scale {
	return scale{legacySessions: 12, listenSessions: 6, writesPerSecond: 5, writeFor: 10 * time.Second, dbEvery: 4}
}
