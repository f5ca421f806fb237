package adapter

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// A ChangeFeed connects the adapters of several server instances that share
// one database, so that a write through any of them (or by any other client
// of the database) re-runs the live queries of all of them.
//
// Wrap with WithChangeFeed calls Attach once. From then on the feed delivers
// the keys that changed elsewhere to the sink, from goroutines of its own, and
// the adapter hands every local Changed call to Publish. A feed must not
// deliver the keys it was given to Publish back to its own sink: the adapter
// has already processed them. A feed that reads the database's log sees this
// instance's writes as it sees anyone's, and may deliver those (pgfeed's WAL
// source does): each costs the queries it reaches one more re-run, which
// finds their results unchanged and notifies no one.
//
// Without a feed the adapter works in-process only: Changed re-runs the live
// queries of this instance.
type ChangeFeed interface {
	// Attach gives the feed the sink for changes from elsewhere.
	Attach(sink ChangeSink)
	// Publish carries keys changed by local writes to the other instances.
	// The adapter calls it from a goroutine of its own, one call at a time,
	// with a context that ends after 30 s, a backstop: a feed should bound
	// its own attempt (pgfeed does, 5 s by default). Keys changed meanwhile
	// wait and go, sorted and without duplicates, in the next call. A
	// Publish that panics fails, logged.
	Publish(ctx context.Context, keys []string) error
}

// A ChangeFeedAll is a ChangeFeed that can also tell the other instances
// that anything may have changed. The adapter uses it when local changes
// pile up while a Publish is slow, more distinct keys than it keeps
// (10,000) even once row keys are widened to their tables: the keys waiting
// are then given up for one PublishAll, so that memory stays bounded
// however many distinct keys are written. A feed that is only a ChangeFeed
// gets every key, however many. pgfeed.Feed is a ChangeFeedAll.
type ChangeFeedAll interface {
	ChangeFeed
	// PublishAll is Publish of every key there is: each other instance
	// re-runs all its live queries, as after ChangeSink.ChangedAll. The
	// adapter calls it as it calls Publish: from its goroutine, one call
	// at a time, with the same backstop.
	PublishAll(ctx context.Context) error
}

// A ChangeFeedHearing is a ChangeFeed that can say whether it hears, right
// now, every change made elsewhere. Live queries answer reads from the
// results they keep (WithKeptResults) only while it does, since a change
// it misses would leave a kept result stale; with a feed that is not a
// ChangeFeedHearing, every read runs its command. pgfeed.Feed is one.
type ChangeFeedHearing interface {
	ChangeFeed
	// Hearing reports whether the feed is connected and has delivered
	// what it missed while it was not (or covered it with ChangedAll):
	// false while it is disconnected, as soon as it knows, and after it
	// reconnects until it has caught up. A change made elsewhere still
	// reaches the sink as late as the feed's latency while it hears:
	// what is between a commit and its delivery is the feed's to bound,
	// not Hearing's. It is called on the path of reads with the adapter's
	// lock held: it must be cheap, never block, and never call into the
	// adapter or the sink.
	Hearing() bool
}

// A ChangeSink receives the changes a ChangeFeed hears from elsewhere.
type ChangeSink interface {
	// Changed reports that the data behind keys changed.
	Changed(keys ...string)
	// ChangedAll reports that anything may have changed, for example after
	// the feed lost its connection and could have missed notifications: every
	// live query re-runs once.
	ChangedAll()
}

// publisher carries the keys of local writes to the change feed without
// making the writer wait: Changed hands it the keys and returns, and one
// goroutine, alive only while keys are pending, publishes them in batches.
// Keys that pile up while the feed is slow coalesce; beyond maxPendingKeys
// the row keys are widened to their tables ("customers/12" to "customers"),
// which re-runs more on the other instances but never less, so memory stays
// bounded by the tables written to, however long the feed is down. Keys
// that name no row (tables, "/12") cannot widen: beyond the bound they are
// given up for one PublishAll when the feed is a ChangeFeedAll, and kept,
// however many, when it is not, since each must still reach the other
// instances.
type publisher struct {
	feed   ChangeFeed
	logger *slog.Logger
	// idle is called, without p.mu, each time the goroutine exits, so
	// that waiters of the registry see it.
	idle func()

	mu      sync.Mutex
	pending map[string]struct{}
	// all: the pending keys were given up for one PublishAll, which covers
	// them and every key that comes until it is sent.
	all bool
	// widenAt is the size of pending beyond which it is widened: 0 means
	// maxPendingKeys. Widening may leave it as large (keys that name only a
	// table do not widen); the next widening then waits until it has
	// doubled, so that a flood of such keys costs linear time, not a pass
	// over the whole set at every Changed.
	widenAt   int
	widenings int // how many times pending was widened, for tests
	running   bool
	closed    bool
}

// publishTimeout bounds one call of ChangeFeed.Publish: a backstop, long
// enough that a feed's own bound decides (pgfeed's WithPublishTimeout, 5 s
// by default), since keys wait for the call under way and nothing else does.
const publishTimeout = 30 * time.Second

// maxPendingKeys bounds the distinct keys waiting to be published.
const maxPendingKeys = 10_000

// publish queues keys and starts the goroutine when it is not running.
func (p *publisher) publish(keys []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.all {
		return // the PublishAll waiting covers them; the goroutine runs
	}
	if p.pending == nil {
		p.pending = make(map[string]struct{}, len(keys))
	}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if table, _, isRow := strings.Cut(k, "/"); isRow {
			if _, wide := p.pending[table]; wide {
				continue // the table, pending already, covers the row
			}
		}
		p.pending[k] = struct{}{}
	}
	if len(p.pending) > max(p.widenAt, maxPendingKeys) {
		p.widenLocked()
		p.widenAt = 2 * len(p.pending)
		if _, canAll := p.feed.(ChangeFeedAll); canAll && len(p.pending) > maxPendingKeys {
			p.all, p.pending, p.widenAt = true, nil, 0
		}
	}
	if !p.running && (p.all || len(p.pending) > 0) {
		p.running = true
		go p.run()
	}
}

// widenLocked replaces every row key by its table. A key with an empty
// table ("/12") stays: the empty key would reach nothing, since every sink
// ignores it.
func (p *publisher) widenLocked() {
	wide := make(map[string]struct{})
	for k := range p.pending {
		if table := tableOf(k); table != "" {
			k = table
		}
		wide[k] = struct{}{}
	}
	p.pending = wide
	p.widenings++
}

// run publishes the pending keys, batch after batch, until none is left.
func (p *publisher) run() {
	for {
		p.mu.Lock()
		if p.all {
			p.all = false
			p.mu.Unlock()
			if err := p.sendAll(); err != nil {
				p.logger.Error("adapter: publishing a change of everything to the change feed failed", "error", err)
			}
			continue
		}
		if len(p.pending) == 0 {
			p.running = false
			p.mu.Unlock()
			p.idle()
			return
		}
		keys := slices.Sorted(maps.Keys(p.pending))
		p.pending, p.widenAt = nil, 0
		p.mu.Unlock()

		if err := p.send(keys); err != nil {
			// The local write has committed regardless; other instances
			// catch up when their feed reconnects (ChangedAll).
			p.logger.Error("adapter: publishing a change to the change feed failed", "keys", keys, "error", err)
		}
	}
}

// send is one call of Publish. A feed that panics fails the call: the
// publisher runs on a goroutine of the adapter's, where a panic would end
// the process (command.go).
func (p *publisher) send(keys []string) (err error) {
	defer recoverUserPanic(p.logger, "ChangeFeed.Publish", "publishing to the change feed", &err)
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	return p.feed.Publish(ctx, keys)
}

// sendAll is one call of PublishAll, as send is of Publish.
func (p *publisher) sendAll() (err error) {
	defer recoverUserPanic(p.logger, "ChangeFeedAll.PublishAll", "publishing to the change feed", &err)
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	return p.feed.(ChangeFeedAll).PublishAll(ctx)
}

// busy reports whether keys are pending or being published.
func (p *publisher) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// close stops taking keys; what is pending is still published.
func (p *publisher) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
}
