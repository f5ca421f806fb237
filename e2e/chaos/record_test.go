package chaos

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// An openKind is what a stream opening was.
type openKind int

const (
	// openFirst: a client's first GET stream, or first listen of a URI.
	openFirst openKind = iota
	// openResume: a GET stream that resumes with Last-Event-ID.
	openResume
	// openAfresh: a GET stream opened without Last-Event-ID on a session
	// that had one: whatever the lost one swallowed is lost.
	openAfresh
	// openRelisten: a subscriptions/listen of a URI whose stream ended,
	// naming the version last read.
	openRelisten
	// openSession: a new session after the first, subscribing again with
	// the versions last read.
	openSession
)

// An open is a stream opening, of the URIs it covers (nil: all of the
// client's).
type open struct {
	at   time.Time
	kind openKind
	uris []string
}

func (o open) covers(uri string) bool { return o.uris == nil || slices.Contains(o.uris, uri) }

// A note is a notifications/resources/updated the client heard.
type note struct {
	uri string
	at  time.Time
}

// A read is a resources/read the client finished.
type read struct {
	uri        string
	start, end time.Time
	name       string // the customer's name in the result
	version    string // the result's _meta version
}

// A clientLog is what one client did, as the judge reads it: a Go
// client writes it as it goes, a TypeScript client's lines are turned
// into it.
type clientLog struct {
	name string
	kind string // library and protocol era
	uris []string

	mu    sync.Mutex
	notes []note
	reads []read
	opens []open
	// retried counts requests that failed and were sent again; restored
	// GET streams whose Last-Event-ID the library dropped and the
	// client's HTTP layer put back; dups events whose id the client had
	// seen already.
	retried, restored, dups int
	// newSessions counts the sessions after the first.
	newSessions int
	// marks are what the client did besides hearing and reading (streams
	// opened, sessions begun and ended), for the timeline of a stale one.
	marks []mark
	// problems are what the client saw go wrong that no cut explains
	// (a malformed result), the first maxProblems of them.
	problems []string
	nProblem int
	// progress is nudged (capacity 1, shared) when a read finishes.
	progress chan struct{}
	// heard, when not nil, gets the URI of every notification, as long
	// as it has room.
	heard chan string
}

func newClientLog(name, kind string, uris []string, progress chan struct{}) *clientLog {
	return &clientLog{name: name, kind: kind, uris: uris, progress: progress}
}

func (l *clientLog) noted(uri string, at time.Time) {
	l.mu.Lock()
	l.notes = append(l.notes, note{uri, at})
	l.mu.Unlock()
	if l.heard != nil {
		select {
		case l.heard <- uri:
		default:
		}
	}
}

func (l *clientLog) readDone(r read) {
	l.mu.Lock()
	l.reads = append(l.reads, r)
	l.mu.Unlock()
	select {
	case l.progress <- struct{}{}:
	default:
	}
}

func (l *clientLog) opened(kind openKind, at time.Time, uris []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opens = append(l.opens, open{at, kind, uris})
}

func (l *clientLog) count(n *int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*n++
}

// A mark is a moment of a client's timeline.
type mark struct {
	at   time.Time
	what string
}

// maxMarks bounds the marks a client keeps: the last ones.
const maxMarks = 400

func (l *clientLog) mark(at time.Time, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.marks) == maxMarks {
		l.marks = append(l.marks[:0], l.marks[maxMarks/2:]...)
	}
	l.marks = append(l.marks, mark{at, what})
}

// timeline is the client's notifications, reads, marks and the cuts
// since from, in order, one a line.
func (l *clientLog) timeline(from time.Time, cuts []time.Time) string {
	l.mu.Lock()
	var ms []mark
	for _, n := range l.notes {
		ms = append(ms, mark{n.at, "notified " + n.uri})
	}
	for _, r := range l.reads {
		ms = append(ms, mark{r.start, fmt.Sprintf("read %s: %q (done %s)", r.uri, r.name, r.end.Format("15:04:05.000"))})
	}
	ms = append(ms, l.marks...)
	l.mu.Unlock()
	for _, c := range cuts {
		ms = append(ms, mark{c, "CUT by the proxy"})
	}
	slices.SortStableFunc(ms, func(a, b mark) int { return a.at.Compare(b.at) })
	var b strings.Builder
	for _, m := range ms {
		if !m.at.Before(from) {
			fmt.Fprintf(&b, "    %s %s\n", m.at.Format("15:04:05.000"), m.what)
		}
	}
	return b.String()
}

// maxProblems bounds the problems a client keeps.
const maxProblems = 10

func (l *clientLog) problem(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nProblem++
	if len(l.problems) < maxProblems {
		l.problems = append(l.problems, l.name+": "+err.Error())
	}
}

// stale judges each of the client's URIs against final: the last
// notification of the URI must be followed by a read (started after it)
// that shows the final name. It returns how many are stale, how many of
// those were told and not done re-reading (behind), and examples.
func (l *clientLog) stale(final map[string]string) (stale, behind int, examples []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, uri := range l.uris {
		var last *note
		for i := range l.notes {
			if l.notes[i].uri == uri {
				last = &l.notes[i]
			}
		}
		if last == nil {
			stale++
			examples = append(examples, fmt.Sprintf("%s %s: never notified (final %q)", l.name, uri, final[uri]))
			continue
		}
		var after *read
		for i := range l.reads {
			r := &l.reads[i]
			if r.uri == uri && !r.start.Before(last.at) && (after == nil || r.start.After(after.start)) {
				after = r
			}
		}
		switch {
		case after == nil:
			stale++
			behind++
			examples = append(examples, fmt.Sprintf("%s %s: notified at %s, not read since (final %q)", l.name, uri, last.at.Format("15:04:05.000"), final[uri]))
		case after.name != final[uri]:
			stale++
			examples = append(examples, fmt.Sprintf("%s %s: last notified at %s, read since %q, final %q", l.name, uri, last.at.Format("15:04:05.000"), after.name, final[uri]))
		}
	}
	return stale, behind, examples
}

// tally are one client's figures.
type tally struct {
	notifications, reads       int
	reconnects                 int // resumed GETs, GETs afresh, re-listens, new sessions
	resumes, afresh, relistens int
	sessions                   int // new sessions after the first
	// replays are notifications that a reopened stream (a resumed GET, a
	// listen naming versions, a new session's subscriptions) brought
	// first for their URI, of a write made before it opened: what the
	// old stream missed.
	replays int
	// extra are notifications that answer no write not announced yet (a
	// catch-up, a URI notified again after a re-listen); quiet those that
	// arrived in the quiet phase, with no write going on.
	extra, quiet            int
	retried, restored, dups int
	problems                int
	latencies               []time.Duration
}

// reopened reports whether an opening is a stream that came back.
func (o open) reopened() bool {
	return o.kind == openResume || o.kind == openRelisten || o.kind == openSession
}

// tally counts the client's figures; writes gives the latency of each
// notification: from the start of the oldest write of its customer that
// no earlier notification of the URI answered, to its arrival. Writes
// paused from quietFrom to quietTo.
func (l *clientLog) tally(writes *loadkit.WriteLog, quietFrom, quietTo time.Time) tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := tally{notifications: len(l.notes), reads: len(l.reads), retried: l.retried, restored: l.restored, dups: l.dups,
		sessions: l.newSessions, problems: l.nProblem}
	for _, o := range l.opens {
		switch o.kind {
		case openResume:
			t.resumes++
		case openAfresh:
			t.afresh++
		case openRelisten:
			t.relistens++
		}
	}
	t.reconnects = t.resumes + t.afresh + t.relistens + t.sessions
	opens := slices.SortedFunc(slices.Values(l.opens), func(a, b open) int { return a.at.Compare(b.at) })
	notes := slices.SortedStableFunc(slices.Values(l.notes), func(a, b note) int { return a.at.Compare(b.at) })
	covered := make(map[string]int)
	// since is, by URI, the reopening its last notification came after.
	since := make(map[string]int)
	for _, n := range notes {
		if !n.at.Before(quietFrom) && n.at.Before(quietTo) {
			t.quiet++
		}
		reopen := -1
		for i, o := range opens {
			if o.at.After(n.at) {
				break
			}
			if o.reopened() && o.covers(n.uri) {
				reopen = i
			}
		}
		id, ok := loadkit.ShowID(n.uri)
		if !ok {
			continue
		}
		upTo, oldest := writes.Pending(id, covered[n.uri], n.at)
		if oldest.IsZero() {
			t.extra++
		} else {
			t.latencies = append(t.latencies, n.at.Sub(oldest))
			covered[n.uri] = upTo
		}
		if last, seen := since[n.uri]; reopen >= 0 && (!seen || last != reopen) && !oldest.IsZero() && oldest.Before(opens[reopen].at) {
			t.replays++
		}
		since[n.uri] = reopen
	}
	return t
}
