package loadkit

import (
	"testing"
	"time"
)

func TestWriteLogPending(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	l := NewWriteLog()
	for _, ms := range []int{10, 20, 30} {
		l.Started(7, at(ms))
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
	if got := l.Counts(); len(got) != 1 || got[7] != 3 {
		t.Errorf("Counts() = %v, want map[7:3]", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upTo, oldest := l.Pending(tt.id, tt.covered, at(tt.arrival))
			if upTo != tt.wantUpTo || !oldest.Equal(tt.wantOldest) {
				t.Errorf("Pending(%d, %d, +%dms) = %d, %v; want %d, %v", tt.id, tt.covered, tt.arrival, upTo, oldest, tt.wantUpTo, tt.wantOldest)
			}
		})
	}
}
