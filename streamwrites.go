package adapter

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamWrites bounds each write into a response by a write deadline (do),
// and lets Close cut short the writes into a long-lived one (a legacy GET
// stream, a subscriptions/listen event stream) whose client stopped
// reading, without waiting for the lock the blocked write holds:
// abort sets a past write deadline on the write under way, and every write
// after it refuses; hurry shortens the deadline of the write under way,
// and of those after it, to a grace.
//
// mu guards the deadlines, never a write: a write sets its deadline and
// marks itself under way under mu, then writes without it, so that Close
// changes the deadline of a blocked write at once, and never misses a
// write that is starting. Close sets a deadline only while a write is
// under way, so that it never reaches a connection the server has moved
// on to another request with. The writes into one stream take turns
// (their callers hold the stream's lock): one at most is under way.
type streamWrites struct {
	mu      sync.Mutex
	writing atomic.Bool // set under mu; read without it by tests
	aborted bool
	// grace, when not 0, bounds every write from now on (hurry).
	grace time.Duration
	// deadline is the write deadline of the write under way; zero for
	// none.
	deadline time.Time
}

var errStreamAborted = errors.New("the response stream was cut short by Close")

// do runs write, a write into w, within timeout (none when 0) or the
// grace hurry set, whichever is shorter, unless abort was called: then, or
// when abort comes while it runs, it fails.
func (s *streamWrites) do(w http.ResponseWriter, timeout time.Duration, write func() error) error {
	rc := http.NewResponseController(w)
	s.mu.Lock()
	if s.aborted {
		s.mu.Unlock()
		return errStreamAborted
	}
	if s.grace > 0 && (timeout == 0 || s.grace < timeout) {
		timeout = s.grace
	}
	if timeout > 0 {
		s.deadline = time.Now().Add(timeout)
		_ = rc.SetWriteDeadline(s.deadline)
	}
	s.writing.Store(true)
	s.mu.Unlock()

	err := write()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.writing.Store(false)
	if !s.deadline.IsZero() {
		s.deadline = time.Time{}
		_ = rc.SetWriteDeadline(time.Time{})
	}
	return err
}

// abort makes the write into w under way fail now, and those after it
// refuse.
func (s *streamWrites) abort(w http.ResponseWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	s.setDeadlineLocked(w, time.Now())
}

// hurry bounds the write into w under way, and every one after it, by
// grace from when it begins: Close's first step waits for the writes under
// way, and a client that reads takes an event in far less, where one that
// does not read would hold Close for the whole write timeout.
func (s *streamWrites) hurry(w http.ResponseWriter, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grace = grace
	s.setDeadlineLocked(w, time.Now().Add(grace))
}

// setDeadlineLocked brings the deadline of the write under way, if any,
// forward to t. s.mu is held.
func (s *streamWrites) setDeadlineLocked(w http.ResponseWriter, t time.Time) {
	if !s.writing.Load() || !s.deadline.IsZero() && s.deadline.Before(t) {
		return
	}
	s.deadline = t
	_ = http.NewResponseController(w).SetWriteDeadline(t)
}
