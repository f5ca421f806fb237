package adapter

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// LiveStats describes the live registry at one moment (Adapter.LiveStats).
// The debug page's JSON form (DebugHandler) writes it under the json names
// of its fields.
type LiveStats struct {
	// Subscriptions counts subscriptions held: one per URI spelling on
	// each listen stream and on each session's resources/subscribe, so a
	// session that lists a URI on two listen streams holds two, each
	// notified under its own subscription id.
	Subscriptions int `json:"subscriptions"`
	// Queries counts distinct queries (command and canonical arguments)
	// behind them; identical subscriptions share one.
	Queries int `json:"queries"`
	// Sessions counts the sessions (on stateless HTTP, the listen streams)
	// that hold subscriptions or have notifications on their way.
	Sessions int `json:"sessions"`
	// Pending counts notifications queued and not yet handed to a session.
	// It never exceeds Subscriptions: a notification already pending for a
	// URI is not queued twice.
	Pending int `json:"pending"`
	// Delayed counts the subscriptions whose notification waits for its
	// interval (WithNotifyInterval) to pass. Pending does not count them.
	Delayed int `json:"delayed"`
	// Delivering counts the sessions whose delivery goroutine is running,
	// each holding the notifications it took from its outbox at once on
	// their way to mcp-go: at most one per subscription of the session.
	Delivering int `json:"delivering"`
	// Running counts queries whose re-run is running or queued.
	Running int `json:"running"`
	// Reruns counts the re-runs completed since Wrap.
	Reruns uint64 `json:"reruns"`
	// Notified counts the notifications/resources/updated handed to
	// sessions since Wrap.
	Notified uint64 `json:"notified"`
	// Late counts the re-runs that outlived their deadline
	// (WithRerunTimeout) since Wrap: they notified no one, and their
	// queries run again on the next change.
	Late uint64 `json:"late"`
	// Coalesced counts the changes since Wrap that cost a query no run of
	// its own, counted once per query a change reached: the query was
	// queued already, or running with one more run already owed. Many
	// writes in a burst cost a query at most one more run.
	Coalesced uint64 `json:"coalesced"`
	// Refused counts the subscriptions refused since Wrap: URIs of the
	// adapter's scheme that name no live command or one not granted, that
	// do not convert, that are over a cap or rate limited, or that came
	// after Close began.
	Refused uint64 `json:"refused"`
	// Kept counts the results that live queries keep to answer reads
	// with (WithKeptResults), and KeptBytes their size: the JSON they
	// answer, within the budget.
	Kept      int `json:"kept"`
	KeptBytes int `json:"keptBytes"`
	// KeptAnswers counts the reads and tools/calls since Wrap answered
	// from a kept result, without running their command; KeptEvicted,
	// the kept results let go for the budget.
	KeptAnswers uint64 `json:"keptAnswers"`
	KeptEvicted uint64 `json:"keptEvicted"`
	// ForeignSessionRequests counts the requests since Wrap that
	// HTTPHandler answered as for an unknown session because they named a
	// session that another identity opened (WithIdentity).
	ForeignSessionRequests uint64 `json:"foreignSessionRequests"`
}

// LiveStats reports the state of the live registry: how many subscriptions,
// queries and sessions it holds, and how much work is pending. It is cheap,
// visiting each session that holds subscriptions once: tests and monitoring
// use it to check bounds.
func (a *Adapter) LiveStats() LiveStats {
	a.live.mu.Lock()
	defer a.live.mu.Unlock()
	return a.live.statsLocked()
}

func (r *liveRegistry) statsLocked() LiveStats {
	pending, notified := 0, r.notifiedGone
	for _, c := range r.conns {
		c.mu.Lock()
		pending += len(c.queue)
		notified += c.notified
		c.mu.Unlock()
	}
	return LiveStats{
		Subscriptions:          r.subs,
		Queries:                len(r.queries),
		Sessions:               len(r.conns),
		Pending:                pending,
		Delayed:                r.delayedSubsLocked(),
		Delivering:             int(r.deliverers.Load()),
		Running:                r.runq.n + r.inflight,
		Reruns:                 r.reruns,
		Notified:               notified,
		Late:                   r.late,
		Coalesced:              r.coalesced,
		Refused:                r.refused.Load(),
		Kept:                   r.kept.n,
		KeptBytes:              r.kept.bytes,
		KeptAnswers:            r.kept.answered,
		KeptEvicted:            r.kept.evicted,
		ForeignSessionRequests: r.a.owners.refused.Load(),
	}
}

// CommandRuns counts the runs of one command's function since Wrap, by
// what caused them (Adapter.CommandRuns): what the commands cost the data
// they read. A read or a tools/call answered from a kept result
// (WithKeptResults) runs nothing and counts nowhere here.
type CommandRuns struct {
	Command string
	// Read counts reads of its URIs (resources/read), Call its
	// tools/calls, Subscribe the first runs of its subscriptions, Rerun
	// the re-runs of its live queries after changes (a batched re-run,
	// WithBatch, counts once for all its argument sets), and App its
	// runs by Adapter.Call. A run refused before it began (invalid
	// arguments, a rate limit) counts nowhere.
	Read, Call, Subscribe, Rerun, App uint64
}

// CommandRuns reports, for every declared command in name order, how many
// times its function ran since Wrap, by cause. It reads counters, each
// updated as a run begins: cheap enough for every metrics scrape.
func (a *Adapter) CommandRuns() []CommandRuns {
	a.mu.RLock()
	out := make([]CommandRuns, 0, len(a.commands))
	for _, c := range a.commands {
		out = append(out, CommandRuns{
			Command:   c.name,
			Read:      c.runs[causeRead].Load(),
			Call:      c.runs[causeCall].Load(),
			Subscribe: c.runs[causeSubscribe].Load(),
			Rerun:     c.runs[causeRerun].Load(),
			App:       c.runs[causeApp].Load(),
		})
	}
	a.mu.RUnlock()
	slices.SortFunc(out, func(x, y CommandRuns) int { return cmp.Compare(x.Command, y.Command) })
	return out
}

// LiveQuery describes one live query at one moment (Adapter.LiveQueries):
// a command with one set of canonical arguments in one scope, shared by
// every subscription to it.
type LiveQuery struct {
	Command string `json:"command"`
	// Arguments are the canonical JSON arguments (object keys sorted)
	// that every subscription of the query spells in its URI, one way or
	// another. They may hold personal data, such as a search term.
	Arguments json.RawMessage `json:"arguments"`
	// Scope stands for the query's scope (WithScope) without saying it: an
	// opaque tag, equal for equal scopes while the process runs, "" when
	// no scope is set.
	Scope string `json:"scope,omitempty"`
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
	// Kept is the size of the result it keeps to answer reads with
	// (WithKeptResults), 0 when it keeps none; Current, that the result
	// kept is current: reads are answered from it, unless the change feed
	// does not hear, the adapter is closing, or the request may not be
	// (a sessionless one, with a feed).
	Kept    int  `json:"kept,omitempty"`
	Current bool `json:"current,omitempty"`
}

// LiveQueries reports every live query, sorted by command, arguments and
// scope tag: what it reads, how many subscribe to it, how often it re-ran
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
			Scope:       r.scopeTag(q.key.scope),
			Subscribers: len(q.subs),
			Reads:       q.reads,
			State:       q.state.String(),
			Reruns:      q.reruns,
			LastChange:  unixNano(q.lastChange),
			Kept:        q.keptSize(),
			Current:     q.fresh,
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
		return cmp.Or(cmp.Compare(x.Command, y.Command), bytes.Compare(x.Arguments, y.Arguments), cmp.Compare(x.Scope, y.Scope))
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

// LiveChanged returns a channel that is closed at the live registry's next
// change: a subscription made or ended, a change reported, the re-runs of
// a burst done, the notifications of a session delivered. A page or a
// monitor that shows LiveStats or LiveQueries waits on it instead of
// polling. Take the channel before reading the state, so that no change
// falls between the two:
//
//	for {
//		changed := a.LiveChanged()
//		show(a.LiveQueries())
//		select {
//		case <-changed:
//		case <-ctx.Done():
//			return
//		}
//	}
func (a *Adapter) LiveChanged() <-chan struct{} {
	r := a.live
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return r.wake
}
