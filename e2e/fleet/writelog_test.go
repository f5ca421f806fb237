package fleet

import (
	"sort"
	"sync"
	"testing"
	"time"
)

// writeLog records when each write of a customer started, for the
// write-to-notification latency. Writes of one customer start in order
// (one writer, one call at a time), so each customer's list is sorted.
type writeLog struct {
	mu     sync.RWMutex
	starts map[int64][]time.Time
}

func newWriteLog() *writeLog { return &writeLog{starts: make(map[int64][]time.Time)} }

// started records that a write of customer id starts at.
func (l *writeLog) started(id int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts[id] = append(l.starts[id], at)
}

// counts returns how many writes of each customer started.
func (l *writeLog) counts() map[int64]int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := make(map[int64]int, len(l.starts))
	for id, starts := range l.starts {
		n[id] = len(starts)
	}
	return n
}

// pending says, for a subscription to customer id that has accounted for
// its first covered writes, which writes a notification arriving at at
// answers: those that started before at. It returns how many writes of the
// customer started before at, and when the oldest of them not yet
// accounted for started (zero when there is none: the notification
// answers no new write).
func (l *writeLog) pending(id int64, covered int, at time.Time) (upTo int, oldest time.Time) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	starts := l.starts[id]
	upTo = sort.Search(len(starts), func(i int) bool { return !starts[i].Before(at) })
	if upTo <= covered {
		return upTo, time.Time{}
	}
	return upTo, starts[covered]
}

func TestWriteLogPending(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	l := newWriteLog()
	for _, ms := range []int{10, 20, 30} {
		l.started(7, at(ms))
	}
	tests := []struct {
		name       string
		id         int64
		covered    int
		arrival    int
		wantUpTo   int
		wantOldest time.Time
	}{
		{"before any write: answers none", 7, 0, 5, 0, time.Time{}},
		{"after the first: answers it", 7, 0, 15, 1, at(10)},
		{"after all, none covered: the oldest is the first", 7, 0, 35, 3, at(10)},
		{"after all, two covered: the oldest is the third", 7, 2, 35, 3, at(30)},
		{"all covered: answers none", 7, 3, 35, 3, time.Time{}},
		{"a write at the arrival's instant does not count", 7, 0, 20, 1, at(10)},
		{"another customer: no writes", 8, 0, 35, 0, time.Time{}},
	}
	if got := l.counts(); len(got) != 1 || got[7] != 3 {
		t.Errorf("counts() = %v, want map[7:3]", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upTo, oldest := l.pending(tt.id, tt.covered, at(tt.arrival))
			if upTo != tt.wantUpTo || !oldest.Equal(tt.wantOldest) {
				t.Errorf("pending(%d, %d, +%dms) = %d, %v; want %d, %v", tt.id, tt.covered, tt.arrival, upTo, oldest, tt.wantUpTo, tt.wantOldest)
			}
		})
	}
}
