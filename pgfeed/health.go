package pgfeed

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
)

// Health is a snapshot of a feed's state, for logs, metrics and readiness
// probes.
type Health struct {
	// Source is what the feed reads: "notify" or "wal".
	Source Source `json:"source"`
	// Channel is the NOTIFY channel (for WAL, the prefix of the messages
	// Publish writes to the log) and Instance this feed's id in it.
	Channel  string `json:"channel"`
	Instance string `json:"instance"`
	// Publication and Slot are what a WAL feed reads: the publication of
	// the watched tables and this feed's replication slot, as in
	// pg_replication_slots.slot_name.
	Publication string `json:"publication,omitempty"`
	Slot        string `json:"slot,omitempty"`
	// Running reports whether Run is running.
	Running bool `json:"running"`
	// Connected reports whether the feed is listening (NOTIFY) or
	// streaming (WAL) right now. While it is not, changes made elsewhere
	// do not reach this instance: a WAL feed hears them once it is back,
	// a NOTIFY feed makes up for them by re-running every live query.
	Connected bool `json:"connected"`
	// ConnectedSince is when the current connection was made.
	ConnectedSince time.Time `json:"connected_since,omitzero"`
	// BackendPID is the server process of the listening or replication
	// connection, as in pg_stat_activity.pid; 0 while disconnected.
	BackendPID uint32 `json:"backend_pid,omitempty"`
	// Confirmed is how far a WAL feed has read the log: every transaction
	// that committed before it has been delivered. The feed resumes from
	// there after a reconnection, and tells the server, which may recycle
	// the log up to there.
	Confirmed LSN `json:"confirmed,omitzero"`
	// LagBytes is how much log the server had written past Confirmed when
	// it last said; LagSeconds is how long after its commit the last
	// transaction was delivered (by the server's clock against this
	// machine's), 0 once the feed has read all there is. Both stay 0 for
	// NOTIFY, which has no position.
	LagBytes   int64   `json:"lag_bytes"`
	LagSeconds float64 `json:"lag_seconds"`
	// Reconnects counts the connections made after a lost connection or a
	// failed attempt.
	Reconnects int `json:"reconnects"`
	// Fallbacks counts the times the feed made every live query re-run
	// because it could not know what it missed: for NOTIFY every
	// reconnection; for WAL only a slot that was gone (dropped, or
	// invalidated by max_slot_wal_keep_size) or a first connection that
	// needed retries.
	Fallbacks int `json:"fallbacks"`
	// SlotsDropped counts the replication slots of other instances this
	// WAL feed dropped because they stayed unused past WithSlotExpiry.
	SlotsDropped int `json:"slots_dropped,omitempty"`
	// LastError is the most recent error of listening or publishing, and
	// LastErrorAt when it happened. They are kept after recovery.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// LastNotification is when the last notification (NOTIFY) or
	// transaction or message (WAL) arrived, including this instance's own,
	// which it skips.
	LastNotification time.Time `json:"last_notification,omitzero"`
	// Received counts the notifications, or the transactions and messages,
	// that arrived; Published the notifications or messages this instance
	// sent.
	Received  int64 `json:"received"`
	Published int64 `json:"published"`
}

// An LSN is a position in PostgreSQL's write-ahead log. It prints, and
// reads in JSON, as PostgreSQL prints it ("16/B374D848"); as a number it
// counts bytes, so the difference of two is the log between them.
type LSN uint64

func (l LSN) String() string { return fmt.Sprintf("%X/%X", uint32(l>>32), uint32(l)) }

// MarshalText writes l as String does.
func (l LSN) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads l as PostgreSQL prints it.
func (l *LSN) UnmarshalText(b []byte) error {
	v, err := pglogrepl.ParseLSN(string(b))
	if err != nil {
		return fmt.Errorf("pgfeed: LSN %.40q: %w", b, err)
	}
	*l = LSN(v)
	return nil
}

// Health returns the feed's current state.
func (f *Feed) Health() Health {
	return f.health.snapshot()
}

// HealthHandler serves Health as JSON: 200 while the feed is connected, 503
// otherwise, so that it can back a readiness probe or an alert.
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

func (s *healthState) init(cfg config, slot string) {
	s.h.Source, s.h.Channel, s.h.Instance = cfg.source, cfg.channel, cfg.instance
	if cfg.source == WAL {
		s.h.Publication, s.h.Slot = cfg.publication, slot
	}
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
