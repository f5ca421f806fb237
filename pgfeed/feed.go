package pgfeed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mcplive/adapter"
)

// Feed is an adapter.ChangeFeed on PostgreSQL, reading LISTEN/NOTIFY or the
// write-ahead log (WithSource). Create it with New, prepare the database
// with Install, hand it to the adapter (which calls Attach), run Run in a
// goroutine for as long as the server lives, and Close it at the end.
//
// Its methods are safe for concurrent use.
type Feed struct {
	cfg    config
	cfgErr error // from New; returned by Run and Publish

	connCfg *pgx.ConnConfig
	// pubCfg is connCfg for the publishing connection (which the WAL
	// source also uses to sweep and to drop its slot).
	pubCfg *pgx.ConnConfig

	sinkMu sync.Mutex
	sink   adapter.ChangeSink

	running atomic.Bool
	// hearing: every change made elsewhere reaches the sink (Hearing).
	hearing   atomic.Bool
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

	// wal is the WAL source's state, kept across connections and Runs.
	// Run's goroutine owns it (one Run at a time); Close reads it once
	// Run has returned.
	wal walState

	health healthState
	pings  atomic.Int64 // liveness checks of the idle connection, for tests
	// waits counts the transactions a WAL feed found committed and not
	// yet visible, and waited for (visible.go), for tests.
	waits atomic.Int64
}

var (
	_ adapter.ChangeFeedAll     = (*Feed)(nil)
	_ adapter.ChangeFeedHearing = (*Feed)(nil)
)

// ErrClosed is returned by Publish after Close.
var ErrClosed = errors.New("pgfeed: feed closed")

// New returns a feed for the database at connString (a URL or DSN as pgx
// accepts it). It does not connect: Run opens the listening or replication
// connection and the first Publish (or, for WAL, the first look at other
// instances' slots) the other one. An invalid connString or option is
// reported by Install, Run and Publish.
//
// Point connString at PostgreSQL itself. LISTEN does not work through
// transaction pooling (PgBouncer's pool_mode=transaction, which hosted
// poolers often use), and replication connections go to the server, not
// through a pooler.
func New(connString string, opts ...Option) *Feed {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	f := &Feed{cfg: cfg, ready: make(chan struct{}), pubSem: make(chan struct{}, 1)}
	f.wal.slot = slotName(cfg.instance)
	f.health.init(cfg, f.wal.slot)
	f.cfgErr = cfg.validate()
	if f.cfgErr != nil {
		return f
	}
	connCfg, err := pgx.ParseConfig(connString)
	if err != nil {
		f.cfgErr = fmt.Errorf("pgfeed: %w", err)
		return f
	}
	f.connCfg, f.pubCfg = connCfg, connCfg
	if cfg.source == WAL {
		// Publish writes its messages in a transaction; flushed at its
		// commit, they reach the other feeds at once, whatever the
		// server's default (with synchronous_commit off, only once the
		// WAL writer flushes, up to wal_writer_delay later).
		f.pubCfg = connCfg.Copy()
		f.pubCfg.RuntimeParams["synchronous_commit"] = "on"
	}
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

// Hearing reports whether every change made elsewhere reaches the
// adapter right now (adapter.ChangeFeedHearing): the feed is connected,
// and has delivered what it missed while it was not (with NOTIFY, by
// ChangedAll; with the WAL source, by reading the log up to where it stood
// when the feed reconnected). While it does not, the adapter answers no
// read from a kept result, since a change it has not heard would leave
// one stale.
func (f *Feed) Hearing() bool { return f.hearing.Load() }

// Instance returns the id this feed puts in what it publishes.
func (f *Feed) Instance() string { return f.cfg.instance }

// Channel returns the NOTIFY channel of this feed.
func (f *Feed) Channel() string { return f.cfg.channel }

// Source returns what the feed reads.
func (f *Feed) Source() Source { return f.cfg.source }

// Ready returns a channel that is closed once Run listens (or streams, for
// WAL) for the first time. A server that must not miss a change made by
// another instance right after it starts can wait for it before serving.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// Close closes the publishing connection, after the Publish in flight if
// any, and leaves no goroutine behind. Publish fails with ErrClosed
// afterwards. Close does not stop Run: cancel Run's context, and wait for
// Run to return, first.
//
// A WAL feed's Close also drops the feed's replication slot, so that the
// server keeps no log for it; it waits for the server at most 5 seconds,
// and a slot it could not drop (the server unreachable, Run still running)
// is left for the other instances to drop once it has been unused for the
// slot expiry (WithSlotExpiry).
func (f *Feed) Close() {
	f.pubSem <- struct{}{}
	defer func() { <-f.pubSem }()
	if f.closed {
		return
	}
	f.closed = true
	if f.cfg.source == WAL {
		// running first: Run's goroutine owns f.wal until it returns.
		if f.running.Load() {
			f.cfg.logger.Warn("pgfeed: Close while Run runs: the replication slot stays until another instance drops it",
				"slot", f.wal.slot, "expiry", f.cfg.slotExpiry)
		} else if f.wal.created {
			f.dropOwnSlot()
		}
	}
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

// onSide runs fn on the publishing connection, opening it if need be, in
// turn with Publish; after an error of fn the connection is dropped, and
// the next use opens another. The WAL source asks its questions there
// while its replication connection streams.
func (f *Feed) onSide(ctx context.Context, fn func(*pgx.Conn) error) error {
	select {
	case f.pubSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-f.pubSem }()
	if f.closed {
		return ErrClosed
	}
	if f.pubConn == nil {
		conn, err := pgx.ConnectConfig(ctx, f.pubCfg)
		if err != nil {
			return fmt.Errorf("pgfeed: connect: %w", err)
		}
		f.pubConn = conn
	}
	if err := fn(f.pubConn); err != nil {
		f.dropPubConn()
		return err
	}
	return nil
}

// dropPubConn closes the publishing connection after an error: the next
// use opens another. Not closeConn: the caller must not wait for pgx's
// cleanup of a broken connection, which ends by itself, or at Close. Call
// it holding pubSem.
func (f *Feed) dropPubConn() {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	f.pubConn.Close(ctx)
	cancel()
	f.drop(f.pubConn.PgConn())
	f.pubConn = nil
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
