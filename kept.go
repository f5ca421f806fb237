package adapter

import (
	"context"
	"time"

	"github.com/mcplive/adapter/internal/digest"
	"github.com/mcplive/adapter/middleware"
)

// Kept results: reads answered from the result a live query already has.
//
// A notification carries no content: every subscriber that hears one reads
// the URI again, and without kept results each of those reads would run the
// command again, although the re-run that caused the notification has just
// computed that very result. So a live query keeps its result, encoded as
// a read answers it, and a read or a tools/call of the same command,
// arguments and scope is answered from it, without running the command,
// for as long as the result is current.
//
// Current means computed by a run that began after the last change that
// reached the query's read set. Changed (and a change feed's sink) marks
// every query it reaches stale before it returns, so that a write followed
// by a read on this instance always sees the write; a run that was under
// way when a change reached its query never makes its result current (the
// query runs again, and that run may). With a change feed, results are
// answered only while the feed says it hears every change made elsewhere
// (ChangeFeedHearing), and a run that began while it did not never makes
// its result current; a feed that cannot say so turns kept results off.
//
// What is kept is bounded: a query keeps a result only while it has
// subscriptions, only when its subscribers read it (a query whose last
// maxUnread results went unread stops encoding them until it is read
// again), only up to the largest size and within the budget of
// WithKeptResults, the results read least recently let go first. A
// command may opt out (WithoutKeptResults).
//
// Everything else about a read stays: the grant and the scope are asked
// (the scope is part of the query's key, so no result crosses scopes), the
// middleware chain and the rate limit run, and the innermost step answers
// from the kept result in place of the command: the chain sees a
// middleware.KeptResult. The result's version is the content digest of
// the bytes answered (digest.Content), the same on every instance.

// keptResult is what a query knows of its result beyond its digest: the
// result's version (MetaVersion) and, while the query keeps it, its JSON
// as a read answers it (text), in the registry's list of kept results,
// most recently read first.
type keptResult struct {
	version    digest.Digest
	text       string // "" while not kept
	q          *query
	prev, next *keptResult
}

// keptResults are the registry's kept results, guarded by its mutex.
type keptResults struct {
	// on: results are kept at all (a budget, and a change feed that says
	// whether it hears); budget and max are WithKeptResults's.
	on          bool
	budget, max int
	// hearing is the change feed's (ChangeFeedHearing); nil without a
	// feed.
	hearing func() bool
	// head and tail of the list of the results whose text is kept, most
	// recently read first.
	head, tail *keptResult
	n, bytes   int
	// answered counts the reads and tools/calls answered from kept
	// results; evicted, the results let go for the budget.
	answered, evicted uint64
	// waiting are the reads that wait for a query's run under way, by
	// query: the channel is closed when the run ends (wakeReadersLocked).
	// A map of the registry's, not a field of every query: few queries
	// have readers waiting at once.
	waiting map[*query]chan struct{}
	// maxWait bounds a read's wait: the re-run deadline.
	maxWait time.Duration
}

// initKept sets the kept results up from the adapter's options.
func (k *keptResults) init(cfg *config) {
	k.budget, k.max, k.maxWait = cfg.keptBudget, cfg.keptMax, cfg.rerunTimeout
	k.on = k.budget > 0 && k.max > 0
	if cfg.feed != nil {
		h, ok := cfg.feed.(ChangeFeedHearing)
		if !ok {
			k.on = false
			return
		}
		k.hearing = h.Hearing
	}
}

// hearingNow reports whether the change feed hears every change made
// elsewhere, as it must while a run that may make a result current
// begins: a change made elsewhere that it missed would leave the result
// stale, and nothing would mark it so. True without a feed.
func (k *keptResults) hearingNow() bool { return k.hearing == nil || k.hearing() }

// version is the version of q's result, when it is known.
func (q *query) version() (digest.Digest, bool) {
	if q.result == nil {
		return digest.Digest{}, false
	}
	return q.result.version, true
}

// keptSize is the size of the result q keeps, 0 for none.
func (q *query) keptSize() int {
	if q.result == nil {
		return 0
	}
	return len(q.result.text)
}

// keepRunLocked notes what a run of q learned of its result beyond the
// digest (its version, and its encoding, kept when q keeps results and its
// subscribers read them), and whether what q keeps is current.
// applyLocked has forgotten what it knew of a result the run found
// changed. A version and the text kept are always of one encoding: equal
// digests are equal JSON but for a result whose MarshalJSON answers
// differently from call to call, or of an interface type whose nil slice
// and nil map digest alike.
func (r *liveRegistry) keepRunLocked(q *query, out runResult, current bool) {
	if out.version != (digest.Digest{}) {
		if q.result == nil {
			q.result = &keptResult{q: q}
		} else if q.result.version != out.version {
			r.dropTextLocked(q.result)
		}
		q.result.version = out.version
		if out.text != "" && r.kept.on && q.key.cmd.keep && q.unread < maxUnread {
			r.keepTextLocked(q.result, out.text)
		}
	}
	q.fresh = current && q.keptSize() > 0
	if q.fresh {
		r.wakeReadersLocked(q)
	}
}

// wakeReadersLocked lets the reads waiting for q's run go on, when q's
// result is current, or no run of it is queued or under way any more.
func (r *liveRegistry) wakeReadersLocked(q *query) {
	ch := r.kept.waiting[q]
	if ch == nil || !q.fresh && (q.state != runIdle || q.dirty) && !q.dropped {
		return
	}
	close(ch)
	delete(r.kept.waiting, q)
}

// keepTextLocked keeps text as e's, when it fits: no larger than max, and
// within the budget once the results read least recently are let go.
func (r *liveRegistry) keepTextLocked(e *keptResult, text string) {
	k := &r.kept
	if e.text != "" || e.q.dropped || len(text) > min(k.max, k.budget) {
		return
	}
	for k.bytes+len(text) > k.budget && k.tail != nil {
		k.evicted++
		r.dropTextLocked(k.tail)
	}
	e.text = text
	k.n++
	k.bytes += len(text)
	k.pushFront(e)
}

// dropTextLocked lets the text e keeps go; its version stays known.
func (r *liveRegistry) dropTextLocked(e *keptResult) {
	if e.text == "" {
		return
	}
	k := &r.kept
	k.unlink(e)
	k.n--
	k.bytes -= len(e.text)
	e.text = ""
	e.q.fresh = false
}

// forgetResultLocked forgets what q knew of its result: the result
// changed, or q is dropped.
func (r *liveRegistry) forgetResultLocked(q *query) {
	if q.result == nil {
		return
	}
	r.dropTextLocked(q.result)
	q.result.q = nil
	q.result, q.fresh = nil, false
}

func (k *keptResults) pushFront(e *keptResult) {
	e.prev, e.next = nil, k.head
	if k.head != nil {
		k.head.prev = e
	}
	k.head = e
	if k.tail == nil {
		k.tail = e
	}
}

func (k *keptResults) unlink(e *keptResult) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		k.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		k.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// Why a command function ran, for CommandRuns.
type runCause uint8

const (
	causeCall runCause = iota // a tools/call, the zero value
	causeRead
	causeSubscribe
	causeRerun
	causeApp
	numCauses
)

// agentRun is what an agent's invocation of a command tells its innermost
// step, through the context: why it runs and, for a read or a tools/call of
// a command whose live queries keep results, the query whose kept result
// may answer in place of the command (ask), and what that result's version
// was.
type agentRun struct {
	cause   runCause
	ask     bool
	key     queryKey
	answer  bool          // the kept result answered
	text    string        // what it answered
	version digest.Digest // its version
}

type agentRunKey struct{}

// withAgentRun is ctx carrying run for the innermost step.
func withAgentRun(ctx context.Context, run *agentRun) context.Context {
	return context.WithValue(ctx, agentRunKey{}, run)
}

// askKept makes run the agentRun of a read or a tools/call (cause) of c
// with canonical arguments args in scope, in ctx: one that asks for the
// kept result when c keeps results and the request may be answered from
// one (mayAnswerKept).
func (r *liveRegistry) askKept(ctx context.Context, run *agentRun, c *command, cause runCause, args string, scope string) *agentRun {
	*run = agentRun{cause: cause}
	if c.keep && r.kept.on && r.mayAnswerKept(ctx) {
		run.ask, run.key = true, queryKey{cmd: c, args: args, scope: scope}
	}
	return run
}

// mayAnswerKept reports whether the request of ctx may be answered from a
// kept result. Without a change feed, always. With one, only a request on
// a session (a 2025-11-25 one, which a balancer keeps on one instance, or
// stdio): a client's notifications come from the instance that holds its
// session or stream, after that instance's re-run, and its reads on that
// same instance find the new result kept. A sessionless request (a
// 2026-07-28 read over Streamable HTTP, which a balancer sends anywhere)
// may reach an instance whose feed has not yet delivered the change that
// another instance notified its client of: answered from the result kept
// there, the client would hold the result from before the change, and no
// notification would follow. It runs its command, which reads what the
// database has.
func (r *liveRegistry) mayAnswerKept(ctx context.Context) bool {
	if r.kept.hearing == nil {
		return true
	}
	s := sessionFrom(ctx)
	return s != nil && s.SessionID() != ""
}

// innermost is what the innermost step of the chain does before it runs
// c for call: it answers from the kept result when it may, and otherwise
// counts the run, by its cause (CommandRuns).
func (c *command) innermost(ctx context.Context, call *middleware.Call, r *liveRegistry) (middleware.KeptResult, bool) {
	cause := causeRerun
	switch call.Origin {
	case middleware.App:
		cause = causeApp
	case middleware.Agent:
		run, _ := ctx.Value(agentRunKey{}).(*agentRun)
		if run == nil {
			cause = causeCall
			break
		}
		if run.ask && run.key.cmd == c {
			if text, version, ok := r.awaitKept(ctx, run.key); ok {
				run.answer, run.text, run.version = true, text, version
				return middleware.KeptResult{JSON: text}, true
			}
		}
		cause = run.cause
	}
	c.runs[cause].Add(1)
	return middleware.KeptResult{}, false
}

// awaitKept answers a read or a tools/call of key from its query's kept
// result, as answerKept does. When the query's result is stale and a run
// of it is queued or under way, it waits for that run rather than run the
// command itself beside it: the run's result, current, answers, and the
// database pays one run for the query and its readers alike. The wait is
// bounded by ctx and by the re-run deadline; a run that ends without a
// current result (it failed, was late, or a change overtook it and the
// run after it ends the same way) lets the read run the command.
func (r *liveRegistry) awaitKept(ctx context.Context, key queryKey) (text string, version digest.Digest, ok bool) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		text, version, ok, wait := r.answerKept(key)
		if ok || wait == nil {
			return text, version, ok
		}
		if timer == nil {
			timer = time.NewTimer(r.kept.maxWait)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return "", version, false
		case <-timer.C:
			return "", version, false
		}
	}
}

// answerKept answers a read or a tools/call of key from its query's kept
// result: its JSON and version, or false when the query keeps no current
// result (or there is none), with, when a run of the query is queued or
// under way whose result may be current, a channel closed when it ends.
// Either way the query learns that its result is read, and so keeps its
// next one.
func (r *liveRegistry) answerKept(key queryKey) (text string, version digest.Digest, ok bool, wait <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queries[key]
	if q == nil || r.closed || r.kept.hearing != nil && !r.kept.hearing() {
		return "", version, false, nil
	}
	q.unread = 0
	e := q.result
	if e == nil || e.text == "" {
		q.missed = true
	}
	if e == nil || e.text == "" || !q.fresh {
		if q.state == runIdle {
			return "", version, false, nil
		}
		ch := r.kept.waiting[q]
		if ch == nil {
			if r.kept.waiting == nil {
				r.kept.waiting = make(map[*query]chan struct{})
			}
			ch = make(chan struct{})
			r.kept.waiting[q] = ch
		}
		return "", version, false, ch
	}
	if r.kept.head != e {
		r.kept.unlink(e)
		r.kept.pushFront(e)
	}
	r.kept.answered++
	return e.text, e.version, true, nil
}

// encodeMode says what a run of a query encodes of its result.
type encodeMode uint8

const (
	encodeNone encodeMode = iota
	// encodeChanged: a result that differs from the query's (the digest
	// the job noted) is encoded; the same one is kept already.
	encodeChanged
	encodeAlways
)

// maxUnread is how many notifications of a query's subscribers in a row
// may go without a read of its result before it stops encoding its
// results: its subscribers do not read them. Eight, so that reads that lag
// several changes behind, on a busy server, still find the next result
// kept: with two, at 50,000 subscriptions (e2e/load), a tenth of the
// reads ran their command; with eight, none. A fan-out nobody reads pays
// for eight encodings of each query's result, then no more.
const maxUnread = 8

// encodeModeLocked says what the next run of q encodes, as the run
// begins: its result when a subscriber needs its version, or when q keeps
// results and its subscribers read them; only a changed one when q knows
// the version of the one it has, unless a read since found nothing kept.
// So a result that is not kept (larger than the largest, or let go for the
// budget) is encoded again only once it changes or is asked for, not by
// every run that finds it the same.
func (r *liveRegistry) encodeModeLocked(q *query) encodeMode {
	keep := r.kept.on && q.key.cmd.keep && q.unread < maxUnread
	missed := q.missed
	q.missed = false
	switch {
	case !keep && !q.versioned:
		return encodeNone
	case q.result == nil || keep && missed:
		return encodeAlways
	}
	return encodeChanged
}

// encodeResult adds to out, the outcome of a run of c that returned res
// (in a slot when inSlot), the result's encoding and its version, or a
// failure's version.
func (c *command) encodeResult(out *runResult, res any, inSlot bool) {
	if out.err != nil {
		out.version = digest.ContentOfError(out.err)
		return
	}
	if inSlot {
		res = c.resultWalk.Value(res)
	}
	b, err := c.marshalResult(res)
	if err != nil {
		return // the digest had the result; no version, nothing kept
	}
	out.text = string(b)
	out.version = digest.Content(b)
}
