package pgfeed

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mcplive/adapter"
)

// Feed is an adapter.ChangeFeed on PostgreSQL LISTEN/NOTIFY. Create it with
// New, hand it to the adapter (which calls Attach), run Run in a goroutine
// for as long as the server lives, and Close it at the end.
//
// Its methods are safe for concurrent use.
type Feed struct {
	cfg    config
	cfgErr error // from New; returned by Run and Publish

	connCfg *pgx.ConnConfig

	sinkMu sync.Mutex
	sink   adapter.ChangeSink

	running   atomic.Bool
	readyOnce sync.Once
	ready     chan struct{} // closed once Run first listens

	// pubSem is a one-slot semaphore guarding pubConn and closed. A
	// channel rather than a mutex, so that a Publish waiting for the
	// connection gives up when its context ends.
	pubSem  chan struct{}
	pubConn *pgx.Conn // opened by the first Publish, dropped on error
	closed  bool
	// dropped are connections Publish gave up on that pgx may still be
	// closing in a goroutine of its own, which waits up to 15 s for a
	// server that does not answer. Close ends them.
	dropped []*pgconn.PgConn

	health healthState
	pings  atomic.Int64 // liveness checks of the idle connection, for tests
}

var _ adapter.ChangeFeedAll = (*Feed)(nil)

// ErrClosed is returned by Publish after Close.
var ErrClosed = errors.New("pgfeed: feed closed")

// New returns a feed for the database at connString (a URL or DSN as pgx
// accepts it). It does not connect: Run opens the listening connection and
// the first Publish the publishing one. An invalid connString or option is
// reported by Run and Publish.
//
// Point connString at PostgreSQL itself or at a session-pooling proxy:
// LISTEN does not work through transaction pooling (PgBouncer's
// pool_mode=transaction, which hosted poolers often use).
func New(connString string, opts ...Option) *Feed {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	f := &Feed{cfg: cfg, ready: make(chan struct{}), pubSem: make(chan struct{}, 1)}
	f.health.init(cfg.channel, cfg.instance)
	f.cfgErr = cfg.validate()
	if f.cfgErr != nil {
		return f
	}
	connCfg, err := pgx.ParseConfig(connString)
	if err != nil {
		f.cfgErr = fmt.Errorf("pgfeed: %w", err)
		return f
	}
	f.connCfg = connCfg
	return f
}

// Attach implements adapter.ChangeFeed: sink receives the changes this feed
// hears from other instances and from the triggers. Call it before Run;
// adapter.Wrap does so when given the feed. Run calls the sink from its own
// goroutine, one notification after the other, so a sink that blocks holds
// up the notifications behind it.
func (f *Feed) Attach(sink adapter.ChangeSink) {
	f.sinkMu.Lock()
	defer f.sinkMu.Unlock()
	f.sink = sink
}

func (f *Feed) attached() adapter.ChangeSink {
	f.sinkMu.Lock()
	defer f.sinkMu.Unlock()
	return f.sink
}

// Instance returns the id this feed puts in what it publishes.
func (f *Feed) Instance() string { return f.cfg.instance }

// Channel returns the NOTIFY channel of this feed.
func (f *Feed) Channel() string { return f.cfg.channel }

// Ready returns a channel that is closed once Run listens for the first
// time. A server that must not miss a change made by another instance
// right after it starts can wait for it before serving.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// Close closes the publishing connection, after the Publish in flight if
// any, and leaves no goroutine behind. Publish fails with ErrClosed
// afterwards. Close does not stop Run: cancel Run's context for that.
func (f *Feed) Close() {
	f.pubSem <- struct{}{}
	defer func() { <-f.pubSem }()
	f.closed = true
	if f.pubConn != nil {
		closeConn(f.pubConn)
		f.pubConn = nil
	}
	for _, pc := range f.dropped {
		// Cuts pgx's wait for the server short. What remains, a
		// cancel request of its own, is bounded by pgx.
		pc.Conn().Close()
		<-pc.CleanupDone()
	}
	f.dropped = nil
}

// drop notes pc, a connection Publish gave up on, for Close, and forgets
// those that are closed by now. Call it holding pubSem.
func (f *Feed) drop(pc *pgconn.PgConn) {
	f.dropped = slices.DeleteFunc(f.dropped, cleanedUp)
	if !cleanedUp(pc) {
		f.dropped = append(f.dropped, pc)
	}
}

func cleanedUp(pc *pgconn.PgConn) bool {
	select {
	case <-pc.CleanupDone():
		return true
	default:
		return false
	}
}
