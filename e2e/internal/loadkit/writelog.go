package loadkit

import (
	"sort"
	"sync"
	"time"
)

// WriteLog records when each write of a customer started, for the
// write-to-notification latency. Writes of one customer start in order
// (one writer, one call at a time), so each customer's list is sorted.
type WriteLog struct {
	mu     sync.RWMutex
	starts map[int64][]time.Time
}

// NewWriteLog returns an empty log.
func NewWriteLog() *WriteLog { return &WriteLog{starts: make(map[int64][]time.Time)} }

// Started records that a write of customer id starts at.
func (l *WriteLog) Started(id int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts[id] = append(l.starts[id], at)
}

// Counts returns how many writes of each customer started.
func (l *WriteLog) Counts() map[int64]int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := make(map[int64]int, len(l.starts))
	for id, starts := range l.starts {
		n[id] = len(starts)
	}
	return n
}

// Pending says, for a subscription to customer id that has accounted for
// its first covered writes, which writes a notification arriving at at
// answers: those that started before at. It returns how many writes of the
// customer started before at, and when the oldest of them not yet
// accounted for started (zero when there is none: the notification
// answers no new write).
func (l *WriteLog) Pending(id int64, covered int, at time.Time) (upTo int, oldest time.Time) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	starts := l.starts[id]
	upTo = sort.Search(len(starts), func(i int) bool { return !starts[i].Before(at) })
	if upTo <= covered {
		return upTo, time.Time{}
	}
	return upTo, starts[covered]
}
