package adapter

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/digest"
	"github.com/mcplive/adapter/middleware"
)

// The live registry keeps every subscription to an expanded URI and the
// queries behind them.
//
// A query is one command with one set of canonical arguments. Every
// subscription with those arguments shares it, whatever the session and
// whatever the spelling of its URI: one re-run serves them all, and each
// subscription is notified with the URI it sent. A query remembers what its
// last run read (its read set, filed in a readIndex so that Changed finds
// the affected queries without looking at the others) and a digest of what
// it returned.
//
// Re-runs: Changed marks each affected query. An idle query joins the run
// queue; a query already queued stays queued (bursts coalesce); a running
// query is marked dirty and runs exactly once more when its run ends, so a
// change that lands during a run is never lost. Worker goroutines drain the
// queue, at most maxRuns at a time, and exist only while it is not empty
// (runner). A worker takes the queries of a command with a batch form
// together, and runs them in one call.
//
// Delivery: when a run's digest differs from the query's, each subscription
// of the query is queued in the outbox of its connection (conn, delivery).
//
// Locks: mu guards the registry and the parts it embeds (subscribers,
// runner, delivery), but for what each of those documents as its own. Each
// connection's outbox has its own mutex, so that delivery never waits for
// the registry; the open GET streams have theirs (getStreams). Lock order:
// mu, then a conn's, then getStreams'. Nothing slow runs under any of them:
// commands run, and notifications are handed to sessions, with all
// released.
type liveRegistry struct {
	a *Adapter

	mu      sync.Mutex
	queries map[queryKey]*query
	made    uint64 // queries made: the last one's seq
	// reached is the scratch of changed: the queries a change reached.
	reached []reached
	// reachedScratch is the other array sortReached sorts r.reached with.
	reachedScratch []reached
	index          readIndex
	// changes counts the changes reported, so that a subscription whose
	// first run overlapped one re-runs once to be sure of its baseline.
	changes uint64
	// coalesced counts the changes that cost a query no run of its own
	// (changeLocked).
	coalesced uint64
	// wake, when not nil, is closed at the next change of state; waiters
	// (WaitIdle) make it.
	wake chan struct{}

	subscribers // who holds subscriptions (subscribe.go)
	runner      // the run queue and its workers (rerun.go)
	delivery    // getting notifications out (conn.go)
	// kept are the results the queries keep to answer reads (kept.go).
	kept keptResults

	// pacer holds the notifications waiting for their interval (pace.go).
	pacer pacer

	// pub publishes local changes to the change feed; nil without one.
	pub *publisher
	// closed: Close has begun; nothing new is taken (lifecycle.go).
	closed bool
	// closing is closed, for a worker running a chunk without the mutex:
	// the chunk's runs not yet started do not start (Close).
	closing atomic.Bool
	// closeDone is closed when the first Close returns (lifecycle.go).
	closeDone chan struct{}
}

// subRef is a subscription of a query, with what queueing its
// notification needs at hand (conn.go).
type subRef struct {
	sb   *sub
	c    *conn
	slot int32
}

// queryKey identifies a query: a command, its canonical JSON arguments, and
// the scope of its subscribers (WithScope; "" without one).
type queryKey struct {
	cmd   *command
	args  string
	scope string
}

type runState uint8

const (
	runIdle runState = iota
	runQueued
	runRunning
)

// query is one live command with one set of arguments, shared by every
// subscription to it.
type query struct {
	key  queryKey
	args any             // decoded and validated once, when it was created
	raw  json.RawMessage // key.args, as the middleware chain sees it
	// values are those its re-runs carry, with a scope (WithScope): the
	// request's that made it, detached from its cancellation (scopeValues);
	// nil without a scope, for the registry's (runner.liveCtx). A pointer,
	// where an interface would take a word more of every query.
	values *scopedValues
	// reads is the read set of the last run, sorted, as filed in the index.
	reads  []string
	digest digest.Digest
	subs   []subRef // each knows its index here (sub.qi)

	// result is what it knows of its result beyond the digest (kept.go):
	// its version and, when it keeps one, its encoding; nil while it
	// knows neither, as a query whose subscribers neither read nor ask
	// for versions does.
	result *keptResult

	state   runState
	dirty   bool // changed while running: run once more
	dropped bool // no subscribers left; out of the registry
	// solo: run it alone, not in a batch, because the batch it was in
	// failed as a whole (batch.go).
	solo bool
	// fresh: its kept result is current, made by a run that began after
	// the last change that reached the query (kept.go).
	fresh bool
	// versioned: a stream of a subscription of it hears versions, so its
	// version is always known. Never cleared.
	versioned bool
	// unread counts the notifications of its subscribers since the last
	// read or tools/call that asked for its result: its subscribers read,
	// or do not (encodeModeLocked). missed: such a read found no kept
	// result, so the next run encodes what it finds.
	unread uint8
	missed bool
	// run is the context of its re-run while one is running, which is
	// cancelled when the query is dropped so that the run can stop early.
	run *runContext

	// What LiveQueries and an Observer are told (observe.go).
	reruns     uint64
	lastChange int64  // when its result last differed, in Unix nanoseconds; 0 for never
	seenChange uint64 // the registry's change count when a change last reached it
	causes     *rerunCauses
	// seq orders the queries by when they were made: the re-runs of one
	// change run oldest first (changed).
	seq uint64
	// pace is its pacing (WithNotifyInterval, pace.go); nil for a command
	// without, and until its result first changes.
	pace *queryPace
}

func newQuery(key queryKey, args any, raw json.RawMessage, out runResult) *query {
	return &query{key: key, args: args, raw: raw, reads: out.reads, digest: out.digest}
}

// runResult is what one run of a query learned.
type runResult struct {
	digest digest.Digest
	reads  []string
	err    error
	// text and version are the result's encoding and content digest,
	// when the run encoded it (encodeMode): a failure has a version and
	// no text.
	text    string
	version digest.Digest
}

func newLiveRegistry(a *Adapter) *liveRegistry {
	r := &liveRegistry{
		a:         a,
		closeDone: make(chan struct{}),
		queries:   make(map[queryKey]*query),
		index:     newReadIndex(),
		subscribers: subscribers{
			conns:      make(map[server.ClientSession]*conn),
			registered: make(map[server.ClientSession]struct{}),
			listens:    make(map[*mcp.SubscriptionsListenRequest]*stream),
			clients:    make(map[string]int),
		},
		runner: runner{
			maxRuns:    4 * runtime.GOMAXPROCS(0),
			liveCtx:    middleware.WithOrigin(context.Background(), middleware.Live),
			freshCalls: len(a.cfg.middleware) > 0,
			digests:    digest.NewHasher(),
			tagSeed:    maphash.MakeSeed(),
		},
		delivery: delivery{
			batches:            sync.Pool{New: func() any { return new([]outNote) }},
			streamConns:        make(map[string]*conn),
			streamWriteTimeout: streamWriteTimeout,
		},
		pacer: pacer{epoch: time.Now()},
	}
	r.kept.init(&a.cfg)
	return r
}

// initLive creates the live registry and connects the change feed.
func (a *Adapter) initLive() {
	r := newLiveRegistry(a)
	a.live = r
	if a.cfg.feed != nil {
		r.pub = &publisher{feed: a.cfg.feed, logger: a.logger, idle: func() {
			r.mu.Lock()
			r.signalLocked()
			r.mu.Unlock()
		}}
		a.cfg.feed.Attach(feedSink{r})
	}
}

// Changed reports, after a write commits, the keys the write changed (in
// the terms of Reads: "customers", or "customers/12"). Every live query
// whose last run read an affected key re-runs, in the background, as origin
// middleware.Live (exempt from rate limits), and the subscribers of each
// whose result is now different hear notifications/resources/updated.
//
//	if err := db.updateCustomer(ctx, id, name); err != nil {
//		return err
//	}
//	a.Changed(fmt.Sprintf("customers/%d", id))
//
// The subscribers' re-reads are answered from the result the re-run
// computed (WithKeptResults), without running the command again. Before
// Changed returns, the results the affected queries keep are stale: a read
// that follows, on any session of this instance, runs the command and sees
// the write.
//
// Changed never blocks: it only marks the affected queries, so it is cheap
// to call after every write, and many calls in a burst cost at most one
// more run of each query. Re-runs run on goroutines of the adapter, at most
// four per CPU (GOMAXPROCS) at once: give the database pool of live
// commands as many connections. A query that is running when its data changes
// runs once more after that run, so no change is missed. Call WaitIdle to
// wait for the re-runs and deliveries.
//
// With a change feed (WithChangeFeed) the keys are also published to the
// other instances, from a goroutine of the adapter's, so that a slow or
// unreachable feed never holds up the writer; a feed error is logged, since
// the local write has committed regardless. After Close, Changed does
// nothing.
func (a *Adapter) Changed(keys ...string) {
	a.changed(nil, keys)
}

// ChangedContext is Changed for a write that has a context, such as the
// request that made it: an Observer (WithObserver) gets ctx as a cause of
// the re-runs the change makes, so that a trace leads from the write to
// the notifications it caused. Without an Observer ctx is not kept.
//
//	a.ChangedContext(ctx, fmt.Sprintf("customers/%d", id))
func (a *Adapter) ChangedContext(ctx context.Context, keys ...string) {
	a.changed(ctx, keys)
}

// changed is Changed with the writer's context, nil when there is none.
func (a *Adapter) changed(ctx context.Context, keys []string) {
	if len(keys) == 0 {
		return
	}
	if !a.live.changed(ctx, keys) {
		return
	}
	if a.live.pub != nil {
		a.live.pub.publish(keys)
	}
}

// feedSink is the ChangeSink a change feed delivers to: it processes
// changes heard from elsewhere locally, without publishing them again.
type feedSink struct{ r *liveRegistry }

func (s feedSink) Changed(keys ...string) { s.r.changed(nil, keys) }
func (s feedSink) ChangedAll()            { s.r.changedAll() }

// changed schedules a re-run of every query a change of keys affects; ctx,
// when not nil, is the writer's (ChangedContext). It reports false, and
// does nothing, once Close has begun.
func (r *liveRegistry) changed(ctx context.Context, keys []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.changes++
	for _, k := range keys {
		if k != "" {
			r.index.affected(k, func(q *query, seq uint64) { r.reached = append(r.reached, reached{seq, q, k}) })
		}
	}
	r.changeInOrderLocked(ctx)
	return true
}

// changedAll schedules a re-run of every query.
func (r *liveRegistry) changedAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes++
	for _, q := range r.queries {
		r.reached = append(r.reached, reached{seq: q.seq, q: q})
	}
	r.changeInOrderLocked(nil)
}

// changeInOrderLocked schedules the queries in r.reached, oldest first,
// and empties it. The index and the query map give them in no order; in
// the order they were made, the re-runs of a change go the same way every
// time, and where queries were made in the order of the data they read
// (say, by customer), consecutive re-runs read neighbouring data: on the
// fan-out benchmark, whose store keeps each customer's rows together,
// that took a fifth off the CPU of a change.
func (r *liveRegistry) changeInOrderLocked(ctx context.Context) {
	sorted, scratch := sortReached(r.reached, r.reachedScratch)
	for _, c := range sorted {
		r.changeLocked(ctx, c.q, c.key)
	}
	// Both arrays held the entries: keep no query alive through them.
	clear(sorted)
	clear(scratch)
	r.reached, r.reachedScratch = sorted[:0], scratch[:0]
	if cap(r.reached) > maxReachedKept || cap(r.reachedScratch) > maxReachedKept {
		r.reached, r.reachedScratch = nil, nil
	}
	r.signalLocked()
}

// maxReachedKept bounds the scratch changed keeps between changes.
const maxReachedKept = 1 << 14

// scheduleLocked asks for one more run of q, coalescing with a run already
// asked for.
func (r *liveRegistry) scheduleLocked(q *query) {
	switch {
	case q.dropped, r.closed:
	case q.state == runRunning:
		q.dirty = true
	case q.state == runIdle:
		r.queueLocked(q)
	}
}

// queueLocked puts q, idle, in the run queue, and starts a worker unless
// maxRuns are alive.
func (r *liveRegistry) queueLocked(q *query) {
	q.state = runQueued
	r.runq.push(q)
	if r.workers < r.maxRuns {
		r.workers++
		go r.work()
	}
}

// firstRun runs c once with args, as the agent, and learns its read set
// and digest, and, when encode, its encoding and version: the first run of
// a subscription.
func (r *liveRegistry) firstRun(ctx context.Context, c *command, args any, raw json.RawMessage, encode bool) runResult {
	ctx, rec := withReadRecorder(withAgentRun(ctx, &agentRun{cause: causeSubscribe}))
	res, err := c.invokeDecoded(ctx, middleware.Agent, args, raw)
	out := r.resultOf(c, res, false, err, rec.finish(c.reads))
	if encode {
		c.encodeResult(&out, res, false)
	}
	return out
}

// resultOf is the outcome of a run that returned res and err and read
// reads; inSlot, that res is the run's result slot (resultSlot), a *R
// holding the result. The digest of a failure is that of its message, so
// that a query that starts or stops failing counts as changed.
func (r *liveRegistry) resultOf(c *command, res any, inSlot bool, err error, reads []string) runResult {
	out := runResult{reads: reads}
	if err == nil {
		out.digest, err = r.digestResult(c, res, inSlot)
	}
	if err != nil {
		out.err = err
		out.digest = r.digests.OfError(err)
	}
	return out
}

// digestResult digests res, a result of c. A MarshalJSON of the user's
// that panics fails the run, on a worker where nothing else would catch it
// (command.go).
func (r *liveRegistry) digestResult(c *command, res any, inSlot bool) (d digest.Digest, err error) {
	defer recoverUserPanic(c.logger, c.name, "digesting the result", &err)
	if inSlot {
		return r.digests.At(res, c.resultWalk)
	}
	return r.digests.Of(res, c.resultWalk)
}

// applyLocked makes out, a run's outcome, the state of q: it refiles q
// under its new read set, keeps the result when the run encoded it
// (current says whether the run began after the last change that reached
// q: kept.go) and, when the result differs, queues a notification for
// each of its subscriptions (or, for a paced command, leaves them to the
// pacer: pace.go) and reports true (the caller notes when, in
// q.lastChange: one clock read per job).
func (r *liveRegistry) applyLocked(q *query, out runResult, current bool) (changed bool) {
	if !slices.Equal(q.reads, out.reads) {
		r.index.remove(q, q.reads)
		q.reads = out.reads
		r.index.add(q, q.reads)
	}
	if changed = out.digest != q.digest; changed {
		q.digest = out.digest
		r.forgetResultLocked(q) // the result before's
	}
	r.keepRunLocked(q, out, current)
	if !changed {
		return false
	}
	if q.key.cmd.notifyEvery > 0 && r.delayLocked(q) {
		return true
	}
	r.notifyAllLocked(q)
	return true
}

// notifyAllLocked queues a notification for each subscription of q, whose
// result changed: each subscriber may read it, or not (kept.go).
func (r *liveRegistry) notifyAllLocked(q *query) {
	if q.unread < maxUnread {
		q.unread++
	}
	for _, s := range q.subs {
		r.enqueueLocked(s)
	}
}

// dropQueryLocked removes a query that has no subscriptions left, and
// stops its run if one is in flight.
func (r *liveRegistry) dropQueryLocked(q *query) {
	q.dropped = true
	delete(r.queries, q.key)
	r.index.remove(q, q.reads)
	r.forgetResultLocked(q)
	r.wakeReadersLocked(q)
	r.undelayLocked(q)
	if rc := q.run; rc != nil {
		// A batch runs on for the queries it still has.
		if rc.members--; rc.members == 0 {
			rc.cancel()
		}
	}
}

// logRerunError logs a re-run that failed for a reason of the server's. A
// vanished row or a refused argument is the agent's to see when it reads.
func (r *liveRegistry) logRerunError(q *query, err error) {
	var verr *ValidationError
	if errors.Is(err, ErrNotFound) || errors.As(err, &verr) || errors.Is(err, context.Canceled) {
		return
	}
	if err == errRerunNotGranted {
		r.a.logger.Debug("adapter: live re-run not granted", "command", q.key.cmd.name, "scope", r.scopeTag(q.key.scope))
		return
	}
	r.a.logger.Warn("adapter: live re-run failed", "command", q.key.cmd.name, "arguments", q.key.args, "scope", r.scopeTag(q.key.scope), "error", err)
}

// tableOf returns the table a key belongs to: what precedes its first
// slash, or the key itself.
func tableOf(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return key
}

// readIndex finds the live queries a change affects without looking at the
// others. Every query is filed under each key it read (exact) and under the
// table of each (table); a query that read nothing is blind and is affected
// by every change.
//
// Each entry keeps its query's sequence number (query.seq), which Changed
// orders the queries by: read from the query itself, a change reaching a
// thousand queries paid a cache miss for each before scheduling any.
type readIndex struct {
	exact map[string]querySet
	table map[string]querySet
	blind querySet
}

// querySet is a set of queries, each with its sequence number.
type querySet map[*query]uint64

func newReadIndex() readIndex {
	return readIndex{
		exact: make(map[string]querySet),
		table: make(map[string]querySet),
		blind: make(querySet),
	}
}

// add files q under reads, a sorted read set without duplicates.
func (ix *readIndex) add(q *query, reads []string) {
	if len(reads) == 0 {
		ix.blind[q] = q.seq
		return
	}
	for _, k := range reads {
		indexPut(ix.exact, k, q)
		indexPut(ix.table, tableOf(k), q)
	}
}

// remove undoes add(q, reads).
func (ix *readIndex) remove(q *query, reads []string) {
	if len(reads) == 0 {
		delete(ix.blind, q)
		return
	}
	for _, k := range reads {
		indexDel(ix.exact, k, q)
		indexDel(ix.table, tableOf(k), q)
	}
}

// affected calls fn for every query a change of key affects, with its
// sequence number; a query may be given more than once.
func (ix *readIndex) affected(key string, fn func(q *query, seq uint64)) {
	t := tableOf(key)
	if t == key {
		for q, seq := range ix.table[t] {
			fn(q, seq)
		}
	} else {
		for q, seq := range ix.exact[key] {
			fn(q, seq)
		}
		for q, seq := range ix.exact[t] {
			fn(q, seq)
		}
	}
	for q, seq := range ix.blind {
		fn(q, seq)
	}
}

func indexPut(m map[string]querySet, k string, q *query) {
	set := m[k]
	if set == nil {
		set = make(querySet, 1)
		m[k] = set
	}
	set[q] = q.seq
}

func indexDel(m map[string]querySet, k string, q *query) {
	set := m[k]
	delete(set, q)
	if len(set) == 0 {
		delete(m, k)
	}
}

// reached is a query a change reached, and by which key ("" for all);
// seq is the query's, kept beside it so that sorting a thousand of them
// does not chase a pointer for every comparison.
type reached struct {
	seq uint64
	q   *query
	key string
}

// sortReached sorts rs by seq, using buf (grown as needed) as scratch, and
// returns the sorted entries and the scratch, which is the other of the
// two arrays: the caller keeps both for the next change.
//
// Why not slices.SortFunc alone: a change reaches every query of a table
// at once, and comparison sorting a thousand of them took 0.15 ms, a
// twentieth of the registry's own cost in the fan-out benchmark. Sequence
// numbers are dense (queries are numbered as they are made), so a radix
// sort on the bytes in which they differ (two passes while they differ in
// their two lowest bytes only) takes a seventh of the time
// (BenchmarkSortReached).
func sortReached(rs, buf []reached) (sorted, scratch []reached) {
	if len(rs) < radixMin {
		slices.SortFunc(rs, bySeq)
		return rs, buf
	}
	var differ uint64 // the bits in which some seq differs from the first
	for _, r := range rs {
		differ |= r.seq ^ rs[0].seq
	}
	buf = slices.Grow(buf[:0], len(rs))[:len(rs)]
	for shift := uint(0); shift < 64; shift += 8 {
		if (differ>>shift)&0xff == 0 {
			continue // every entry has the same byte here
		}
		var at [256]int // where each byte value's entries go
		for _, r := range rs {
			at[byte(r.seq>>shift)]++
		}
		n := 0
		for b, c := range at {
			at[b], n = n, n+c
		}
		for _, r := range rs {
			d := byte(r.seq >> shift)
			buf[at[d]] = r
			at[d]++
		}
		rs, buf = buf, rs
	}
	return rs, buf
}

// radixMin is the fewest entries sortReached sorts by radix: below it, the
// histogram of a pass costs more than comparing.
const radixMin = 64

// bySeq orders reached entries by their queries' sequence numbers.
func bySeq(a, b reached) int { return cmp.Compare(a.seq, b.seq) }

// changeLocked schedules q for a change of key ("" for a change of
// everything), reported with ctx (nil for none). A change counts as
// coalesced when it costs q no run of its own: q was queued already, or
// running with one more run already owed. One Changed call that reaches q
// through several keys is one change.
func (r *liveRegistry) changeLocked(ctx context.Context, q *query, key string) {
	first := q.seenChange != r.changes
	q.seenChange = r.changes
	q.fresh = false // before Changed returns: a read after it runs the command
	if first && !r.closed && (q.state == runQueued || q.state == runRunning && q.dirty) {
		r.coalesced++
	}
	if r.a.cfg.observer != nil {
		q.noteCauseLocked(ctx, key, first)
	}
	r.scheduleLocked(q)
}

// signalLocked wakes whoever waits for the registry to change.
func (r *liveRegistry) signalLocked() {
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}

// waitFor blocks until done holds, or ctx ends. done is called with r.mu
// held, after every change of the registry's state.
func (r *liveRegistry) waitFor(ctx context.Context, done func() bool) error {
	for {
		r.mu.Lock()
		if done() {
			r.mu.Unlock()
			return nil
		}
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		wake := r.wake
		r.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitIdle blocks until the adapter has no live work left: no re-run
// running or queued, no notification waiting in any connection's outbox,
// and none delayed by WithNotifyInterval. It returns ctx's error if ctx
// ends first.
//
// It is meant for tests, and for an orderly shutdown: after a write and its
// Changed call, WaitIdle returns once every affected query has re-run and
// every resulting notification has been handed to its session (through
// HTTPHandler, to a legacy session's GET stream). A client that stops
// reading its notifications, or a legacy HTTP client that has no GET
// stream open, can keep the adapter busy until its session ends, so give
// ctx a deadline.
func (a *Adapter) WaitIdle(ctx context.Context) error {
	if ctx == nil {
		panic("adapter: WaitIdle: nil context")
	}
	return a.live.waitFor(ctx, a.live.idleLocked)
}

// idleLocked reports whether no goroutine of the registry is at work and
// no notification waits. An outbox that is not empty has its delivery
// goroutine (enqueueLocked starts it, and it leaves only with the outbox
// empty, both under the conn's mutex), except the outbox of a session served on GET
// streams while it has none open (conn.go): those are looked at one
// by one, and there are as many as legacy HTTP sessions subscribe.
func (r *liveRegistry) idleLocked() bool {
	if r.workers != 0 || r.deliverers.Load() != 0 || r.runq.n != 0 || len(r.held.conns) != 0 || len(r.pacer.due) != 0 ||
		r.pub != nil && r.pub.busy() {
		return false
	}
	for _, c := range r.streamConns {
		c.mu.Lock()
		waiting := len(c.queue) > 0
		c.mu.Unlock()
		if waiting {
			return false
		}
	}
	return true
}

// scopeValues are the values a scoped query's re-runs carry: those of ctx,
// the request that made the query, detached from its cancellation and
// deadline, without the adapter's own state of that request, and with
// origin Live.
func scopeValues(ctx context.Context) *scopedValues {
	return &scopedValues{middleware.WithOrigin(requestValues{context.WithoutCancel(ctx)}, middleware.Live)}
}

// scopedValues are the values a scoped query's re-runs carry.
type scopedValues struct{ context.Context }

// requestValues hides the adapter's own per-request state from a context
// kept past its request: the error box, the HTTP edge's marks and a listen
// stream's closer belong to the request alone.
type requestValues struct{ context.Context }

func (v requestValues) Value(key any) any {
	switch key.(type) {
	case errorBoxKey, httpEdgeKey, listenCloserKey, readRecorderKey:
		return nil
	}
	return v.Context.Value(key)
}

// scopeTag stands for a scope wherever a query is described (LiveQueries,
// the debug page, logs): the same tag for the same scope in one process,
// and nothing of the scope itself. "" for no scope.
func (r *liveRegistry) scopeTag(scope string) string {
	if scope == "" {
		return ""
	}
	return fmt.Sprintf("%016x", maphash.String(r.tagSeed, scope))
}

// Versions: what a client saw, named.
//
// A read of a live URI and, for a client that asks, each of its
// notifications carry the result's version in _meta under MetaVersion: 32
// hexadecimal digits, the first 128 bits of the SHA-256 of the JSON a read
// answers, so equal for equal results on every instance and across
// restarts. A client that reconnects names the version it last saw of each
// URI (MetaVersions in a listen's _meta, MetaVersion in a
// resources/subscribe's); a URI whose result has another version now is
// notified at once, so that the client misses nothing and re-reads only
// what changed, even when it reconnects to another instance of a fleet.
const (
	// MetaVersion is the _meta key of a live URI's result version: on a
	// read's result, on notifications/resources/updated to a client that
	// named versions, and on a resources/subscribe naming the version the
	// client last saw.
	MetaVersion = "io.github.mcplive/version"
	// MetaVersions is the _meta key of a subscriptions/listen that names,
	// per URI, the version the client last saw: an object from URI to
	// version. Naming it, even empty, asks for versions on the stream's
	// notifications.
	MetaVersions = "io.github.mcplive/versions"
)

// versionText is the text of a version: d's two words in hexadecimal,
// each of 16 digits.
func versionText(d digest.Digest) string {
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], d[0])
	binary.BigEndian.PutUint64(raw[8:], d[1])
	return hex.EncodeToString(raw[:])
}
