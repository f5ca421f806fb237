package pgfeed

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Health is a snapshot of a feed's state, for logs, metrics and readiness
// probes.
type Health struct {
	// Channel is the NOTIFY channel and Instance this feed's id in it.
	Channel  string `json:"channel"`
	Instance string `json:"instance"`
	// Running reports whether Run is running.
	Running bool `json:"running"`
	// Connected reports whether the feed is listening right now. While it is
	// not, changes made elsewhere do not reach this instance (they are made
	// up for by re-running every live query once it reconnects).
	Connected bool `json:"connected"`
	// ConnectedSince is when the current listening connection was made.
	ConnectedSince time.Time `json:"connected_since,omitzero"`
	// BackendPID is the server process of the listening connection, as in
	// pg_stat_activity.pid; 0 while disconnected.
	BackendPID uint32 `json:"backend_pid,omitempty"`
	// Reconnects counts the connections made after a lost connection or a
	// failed attempt; each one re-ran every live query once.
	Reconnects int `json:"reconnects"`
	// LastError is the most recent error of listening or publishing, and
	// LastErrorAt when it happened. They are kept after recovery.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// LastNotification is when the last notification arrived, including
	// this instance's own, which it skips.
	LastNotification time.Time `json:"last_notification,omitzero"`
	// Received counts the notifications that arrived, Published the ones
	// this instance sent.
	Received  int64 `json:"received"`
	Published int64 `json:"published"`
}

// Health returns the feed's current state.
func (f *Feed) Health() Health {
	return f.health.snapshot()
}

// HealthHandler serves Health as JSON: 200 while the feed is listening, 503
// otherwise, so that it can back a readiness probe.
func (f *Feed) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := f.Health()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !h.Connected {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(h)
	})
}

// healthState is Health behind a mutex; the methods record events.
type healthState struct {
	mu sync.Mutex
	h  Health
}

func (s *healthState) init(channel, instance string) {
	s.h.Channel, s.h.Instance = channel, instance
}

func (s *healthState) snapshot() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

func (s *healthState) update(fn func(h *Health)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.h)
}

func (s *healthState) failed(err error) {
	s.update(func(h *Health) {
		h.LastError, h.LastErrorAt = err.Error(), time.Now()
	})
}
