package adapter

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// streamWrites lets Close cut short the writes into a long-lived response
// (a legacy GET stream, a subscriptions/listen event stream) whose client
// stopped reading, without waiting for the lock the blocked write holds:
// abort sets a past write deadline on the write under way, and every write
// after it refuses.
//
// Of the two flags each side sets one and then reads the other (a write
// sets writing and its deadline, then reads aborted; abort sets aborted,
// then reads writing), so that a write and an abort at the same time never
// miss each other. abort sets a deadline only while a write is under way,
// so that it never reaches a connection the server has moved on to another
// request with.
type streamWrites struct {
	writing atomic.Bool
	aborted atomic.Bool
}

var errStreamAborted = errors.New("the response stream was cut short by Close")

// do runs write, a write into w, within timeout (none when 0), unless
// abort was called: then, or when abort comes while it runs, it fails.
func (s *streamWrites) do(w http.ResponseWriter, timeout time.Duration, write func() error) error {
	s.writing.Store(true)
	defer s.writing.Store(false)
	if timeout > 0 {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Now().Add(timeout))
		defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	}
	if s.aborted.Load() {
		return errStreamAborted
	}
	return write()
}

// abort makes the write into w under way fail now, and those after it
// refuse.
func (s *streamWrites) abort(w http.ResponseWriter) {
	s.aborted.Store(true)
	if s.writing.Load() {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now())
	}
}
