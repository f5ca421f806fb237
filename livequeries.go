package adapter

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// LiveQuery describes one live query at one moment (Adapter.LiveQueries):
// a command with one set of canonical arguments, shared by every
// subscription to it.
type LiveQuery struct {
	Command string `json:"command"`
	// Arguments are the canonical JSON arguments (object keys sorted)
	// that every subscription of the query spells in its URI, one way or
	// another. They may hold personal data, such as a search term.
	Arguments json.RawMessage `json:"arguments"`
	// Subscribers counts its subscriptions, on every connection.
	Subscribers int `json:"subscribers"`
	// Reads is the read set of its last run, sorted: a change of any of
	// these keys re-runs it. Empty means it re-runs on every change.
	Reads []string `json:"reads"`
	// State is "idle", "queued" (a re-run waits for a worker) or
	// "running".
	State string `json:"state"`
	// Reruns counts its re-runs since it was created by its first
	// subscription.
	Reruns uint64 `json:"reruns"`
	// LastChange is when its result last differed, so that its
	// subscribers were notified; zero for never since it was created.
	LastChange time.Time `json:"lastChange,omitzero"`
}

// LiveQueries reports every live query, sorted by command and then by
// arguments: what it reads, how many subscribe to it, how often it re-ran
// and when its result last changed. It copies the registry's state under
// its lock, so it costs in proportion to the queries held: a page or a
// debug endpoint may call it, a hot path should use LiveStats.
// LiveChanged says when it is worth calling again.
func (a *Adapter) LiveQueries() []LiveQuery {
	r := a.live
	r.mu.Lock()
	out := make([]LiveQuery, 0, len(r.queries))
	for _, q := range r.queries {
		out = append(out, LiveQuery{
			Command:     q.key.cmd.name,
			Arguments:   json.RawMessage(q.key.args),
			Subscribers: len(q.subs),
			Reads:       q.reads,
			State:       q.state.String(),
			Reruns:      q.reruns,
			LastChange:  unixNano(q.lastChange),
		})
	}
	r.mu.Unlock()
	// A query's read set is replaced, never changed in place (applyLocked),
	// so it is copied here, for the caller to own, after the lock is
	// released: a debug page's every event would otherwise hold the
	// re-runs up for a copy of every key of every query.
	for i := range out {
		out[i].Reads = slices.Clone(out[i].Reads)
	}
	slices.SortFunc(out, func(x, y LiveQuery) int {
		return cmp.Or(cmp.Compare(x.Command, y.Command), bytes.Compare(x.Arguments, y.Arguments))
	})
	return out
}

// unixNano is the time of n Unix nanoseconds, zero for 0.
func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (s runState) String() string {
	switch s {
	case runQueued:
		return "queued"
	case runRunning:
		return "running"
	}
	return "idle"
}
