package pgfeed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mcplive/adapter"
)

const (
	// connectTimeout bounds one connection attempt when the connection
	// string sets no connect_timeout.
	connectTimeout = 10 * time.Second
	// pingTimeout bounds the liveness check of an idle connection.
	pingTimeout = 10 * time.Second
	// closeTimeout bounds the polite goodbye to the server.
	closeTimeout = 5 * time.Second
)

// Run listens for changes and delivers them to the attached sink until ctx
// ends, then returns nil. It returns an error at once only when it cannot
// start: an invalid configuration, no sink attached, or Run already
// running; and, for WAL, when the database cannot serve it on Run's first
// connection (see below).
//
// Run starts no goroutine that outlives it.
//
// # NOTIFY
//
// Run keeps one connection of its own for LISTEN. When the connection is
// lost it reconnects with exponential backoff, retrying for as long as ctx
// lasts, and after every reconnection calls the sink's ChangedAll: the
// notifications sent while it was away are lost, so every live query re-runs
// once. It does the same when its very first connection needed retries,
// since changes may have been made meanwhile, and when it is run again after
// an earlier Run of the feed listened. An idle connection is checked
// every 30 seconds, so that a silently dropped one (a NAT timeout, a
// failover) is noticed too.
//
// # WAL
//
// Run keeps one replication connection. On its first connection it creates
// the feed's replication slot (dropping one of the same name that a
// previous process with this instance id left), which marks the point from
// which every committed change is delivered; then it streams, delivering
// one Changed per committed transaction, in commit order, and confirming
// each to the server after delivering it (WithStatusInterval). When the
// connection is lost it reconnects with the same backoff and resumes from
// the last transaction it delivered: nothing is missed and nothing re-runs
// but what changed. Only when the slot is gone by then (dropped, or
// invalidated by the server's max_slot_wal_keep_size) does it create a new
// one and call ChangedAll, logged and counted in Health.Fallbacks, as it
// does when its very first connection needed retries.
//
// On its first connection Run returns an error, rather than retry, when the
// database cannot serve the WAL source: wal_level is not logical, the
// server is older than PostgreSQL 14, the role lacks the REPLICATION
// attribute, or the publication does not exist (Install creates it).
//
// While it streams, Run also drops the slots of other instances of the
// database that stayed unused past the slot expiry (WithSlotExpiry).
func (f *Feed) Run(ctx context.Context) error {
	if f.cfgErr != nil {
		return f.cfgErr
	}
	sink := f.attached()
	if sink == nil {
		return errors.New("pgfeed: Run before Attach: give the feed to the adapter (adapter.WithChangeFeed) first")
	}
	if !f.running.CompareAndSwap(false, true) {
		return errors.New("pgfeed: Run is already running")
	}
	defer f.running.Store(false)
	f.health.update(func(h *Health) { h.Running = true })
	defer f.health.update(func(h *Health) { h.Running = false })
	if f.cfg.source == WAL {
		return f.runWAL(ctx, sink)
	}
	return f.runNotify(ctx, sink)
}

// runNotify is Run for the Notify source.
func (f *Feed) runNotify(ctx context.Context, sink adapter.ChangeSink) error {
	log := f.cfg.logger
	// missed: whether notifications may have been lost before this
	// connection. They were if an earlier Run listened: nothing did
	// since it returned.
	missed := f.listened()
	failures := 0
	for {
		conn, err := f.connect(ctx)
		if err == nil {
			connected := time.Now()
			pid := conn.PgConn().PID()
			f.health.update(func(h *Health) {
				h.Connected, h.ConnectedSince, h.BackendPID = true, time.Now(), pid
				if missed {
					h.Reconnects++
					h.Fallbacks++
				}
			})
			f.readyOnce.Do(func() { close(f.ready) })
			// Hearing from LISTEN on; the ChangedAll that covers what was
			// missed comes after, so that the re-runs it causes begin
			// while the feed hears, and what they keep is current.
			f.hearing.Store(true)
			if missed {
				log.Info("pgfeed: reconnected; re-running all live queries", "channel", f.cfg.channel, "pid", pid)
				// After LISTEN, so that a change made while the queries
				// re-run is heard too.
				sink.ChangedAll()
			} else {
				log.Debug("pgfeed: listening", "channel", f.cfg.channel, "pid", pid)
			}
			err = f.listen(ctx, conn, sink)
			f.hearing.Store(false)
			closeConn(conn)
			// Only a connection that lasted resets the backoff: one
			// lost at once (a server in a crash loop, a proxy that cuts
			// every connection) counts as a failed attempt, or Run
			// would reconnect, and re-run every live query, every
			// backoffMin for as long as it lasts.
			if time.Since(connected) >= f.cfg.backoffMax {
				failures = 0
			}
			f.health.update(func(h *Health) {
				h.Connected, h.ConnectedSince, h.BackendPID = false, time.Time{}, 0
			})
		}
		if ctx.Err() != nil {
			return nil
		}
		missed = true
		f.health.failed(err)
		delay := backoff(f.cfg.backoffMin, f.cfg.backoffMax, failures)
		failures++
		log.Warn("pgfeed: not listening; changes from other instances are delayed until it reconnects",
			"channel", f.cfg.channel, "error", err, "retry_in", delay)
		if !sleep(ctx, delay) {
			return nil
		}
	}
}

// listened reports whether Run has listened before.
func (f *Feed) listened() bool {
	select {
	case <-f.ready:
		return true
	default:
		return false
	}
}

// connect opens the listening connection and subscribes to the channel.
func (f *Feed) connect(ctx context.Context) (*pgx.Conn, error) {
	timeout := f.connCfg.ConnectTimeout
	if timeout <= 0 {
		timeout = connectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, f.connCfg)
	if err != nil {
		return nil, fmt.Errorf("pgfeed: connect: %w", err)
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{f.cfg.channel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("pgfeed: listen on %q: %w", f.cfg.channel, err)
	}
	return conn, nil
}

// listen delivers notifications until the connection fails or ctx ends.
func (f *Feed) listen(ctx context.Context, conn *pgx.Conn, sink adapter.ChangeSink) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, f.cfg.pingInterval)
		n, err := conn.WaitForNotification(wctx)
		idle := wctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		switch {
		case err == nil:
			f.deliver(n, sink)
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case idle && !conn.IsClosed():
			// pgx leaves the connection usable after a timeout; a round
			// trip proves the server is still there.
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			f.pings.Add(1)
			if err == nil {
				continue
			}
		}
		return fmt.Errorf("pgfeed: connection lost: %w", err)
	}
}

// deliver hands one notification to the sink, unless this instance sent it.
func (f *Feed) deliver(n *pgconn.Notification, sink adapter.ChangeSink) {
	f.health.update(func(h *Health) {
		h.LastNotification = time.Now()
		h.Received++
	})
	p, all, err := decodePayload(n.Payload)
	if err != nil {
		f.cfg.logger.Warn("pgfeed: re-running all live queries", "channel", n.Channel, "error", err)
	}
	switch {
	case all:
		sink.ChangedAll()
	case p.Instance == f.cfg.instance:
		// Published by this instance: the adapter handled it before
		// publishing.
	case len(p.Keys) > 0:
		sink.Changed(p.Keys...)
	}
}

// closeConn closes conn and waits until pgx has released everything it
// holds. After a lost connection pgx cleans up in a goroutine of its own
// (bounded by its own 15-second deadline); waiting for it keeps Run's promise
// that no goroutine outlives it.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	conn.Close(ctx)
	<-conn.PgConn().CleanupDone()
}
