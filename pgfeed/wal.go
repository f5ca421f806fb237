package pgfeed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/mcplive/adapter"
)

// walState is what a WAL feed keeps across its connections and Runs.
type walState struct {
	slot string
	// created: this feed created its slot, and the slot holds every
	// change since confirmed.
	created bool
	// confirmed is how far the feed has delivered: every transaction that
	// committed before it. serverEnd is the server's end of the log, as
	// it last said.
	confirmed pglogrepl.LSN
	serverEnd pglogrepl.LSN
	// lastPID is the server process of the feed's last replication
	// connection.
	lastPID uint32
	// hearFrom is the end of the log when the feed last connected: once
	// it has delivered up to there, it hears every change (Hearing),
	// unless doubted: it delivered a transaction it could not make sure
	// was visible (awaitVisible), whose re-runs may have read what came
	// before it. allOnHearing: once it hears, every live query runs again
	// (a new slot, or doubt).
	hearFrom     pglogrepl.LSN
	doubted      bool
	allOnHearing bool
	// unused are the other feeds' slots seen unused, and since when
	// (sweep).
	unused map[string]time.Time
	// snap is the last snapshot the feed asked for: every transaction it
	// saw complete is visible (visible.go).
	snap      pgSnapshot
	snapKnown bool
	// unsureUntil: a question failed; deliver without asking until then.
	unsureUntil time.Time
}

// errCannotServe marks the errors of a database that cannot serve the WAL
// source as it is set up, which Run returns on its first connection rather
// than retry.
var errCannotServe = errors.New("pgfeed: the database cannot serve the WAL source")

// minServerVersion is the first PostgreSQL whose pgoutput sends the
// messages Publish writes (the "messages" option).
const minServerVersion = 14

// runWAL is Run for the WAL source.
func (f *Feed) runWAL(ctx context.Context, sink adapter.ChangeSink) error {
	log := f.cfg.logger
	if f.wal.unused == nil {
		f.wal.unused = make(map[string]time.Time)
	}
	failures := 0
	for {
		pc, err := f.connectReplication(ctx)
		if err == nil {
			connected := time.Now()
			err = f.replicate(ctx, pc, sink, failures > 0)
			f.hearing.Store(false)
			closePgConn(pc)
			// As for NOTIFY: a connection lost at once counts as a
			// failed attempt.
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
		f.health.failed(err)
		if errors.Is(err, errCannotServe) && !f.listened() {
			return err
		}
		delay := backoff(f.cfg.backoffMin, f.cfg.backoffMax, failures)
		failures++
		log.Warn("pgfeed: not streaming the log; changes from elsewhere wait until it reconnects",
			"slot", f.wal.slot, "error", err, "retry_in", delay)
		if !sleep(ctx, delay) {
			return nil
		}
	}
}

// connectReplication opens a logical replication connection to the
// database.
func (f *Feed) connectReplication(ctx context.Context) (*pgconn.PgConn, error) {
	cfg := f.connCfg.Config.Copy()
	cfg.RuntimeParams["replication"] = "database"
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		// What pg_stat_replication and pg_stat_activity show for it.
		cfg.RuntimeParams["application_name"] = "pgfeed " + f.wal.slot
	}
	// A context that ends must not make pgconn send the server a cancel
	// request, which would end the replication: a deadline on the socket
	// interrupts a wait and leaves the connection usable. (pgconn's
	// default, made explicit: Run relies on it.)
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pc.Conn()}
	}
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = connectTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pc, err := pgconn.ConnectConfig(cctx, cfg)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
			return nil, fmt.Errorf("%w: a replication connection needs a role with the REPLICATION attribute (ALTER ROLE … REPLICATION, or the service's replication role): %w", errCannotServe, err)
		}
		return nil, fmt.Errorf("pgfeed: connect for replication: %w", err)
	}
	return pc, nil
}

// replicate prepares the slot on a new connection, starts streaming from
// the feed's position and streams until the connection fails or ctx ends.
// retried: connections failed before this one.
func (f *Feed) replicate(ctx context.Context, pc *pgconn.PgConn, sink adapter.ChangeSink, retried bool) error {
	log := f.cfg.logger
	if err := f.checkServer(ctx, pc); err != nil {
		return err
	}
	first := !f.wal.created
	fallback, err := f.ensureSlot(ctx, pc)
	if err != nil {
		return err
	}
	// The first slot of a feed whose first connections failed: a live
	// query made meanwhile may have missed changes, as with NOTIFY.
	fallback = fallback || first && retried
	if err := f.sweep(ctx, pc); err != nil {
		log.Warn("pgfeed: looking for unused replication slots", "error", err)
	}
	// Where the log ends now: what was committed while the feed was away
	// lies before it, and until the feed has delivered that far it does
	// not hear every change.
	sys, err := pglogrepl.IdentifySystem(ctx, pc)
	if err != nil {
		return fmt.Errorf("pgfeed: identify the server's end of the log: %w", err)
	}
	f.wal.hearFrom = sys.XLogPos
	err = pglogrepl.StartReplication(ctx, pc, f.wal.slot, f.wal.confirmed, pglogrepl.StartReplicationOptions{
		Mode: pglogrepl.LogicalReplication,
		PluginArgs: []string{
			"proto_version '1'",
			"publication_names '" + f.cfg.publication + "'", // validName: nothing to quote
			"messages 'true'",
		},
	})
	if err != nil {
		return fmt.Errorf("pgfeed: start replication from slot %s: %w", f.wal.slot, err)
	}
	pid := pc.PID()
	f.wal.lastPID = pid
	reconnect := f.listened() || retried
	f.health.update(func(h *Health) {
		h.Connected, h.ConnectedSince, h.BackendPID = true, time.Now(), pid
		h.Confirmed = LSN(f.wal.confirmed)
		if reconnect {
			h.Reconnects++
		}
		if fallback {
			h.Fallbacks++
		}
	})
	f.readyOnce.Do(func() { close(f.ready) })
	switch {
	case fallback:
		log.Warn("pgfeed: streaming from a new replication slot, the changes since the old one's position are unknown; re-running all live queries",
			"slot", f.wal.slot, "from", f.wal.confirmed)
		// Once it hears: so that the re-runs begin when nothing can be
		// missed any more, and the results they keep are current.
		f.wal.allOnHearing = true
	case reconnect:
		log.Info("pgfeed: streaming again from the last position delivered", "slot", f.wal.slot, "from", f.wal.confirmed, "pid", pid)
	default:
		log.Debug("pgfeed: streaming", "slot", f.wal.slot, "from", f.wal.confirmed, "pid", pid)
	}
	// Asked for an answer at once, so that a feed with nothing to catch
	// up on knows it from the first keepalive, not the first interval's.
	if err := f.sendStatus(pc, true); err != nil {
		return err
	}
	f.heardUpTo(f.wal.confirmed, sink)
	return f.stream(ctx, pc, sink)
}

// checkServer refuses a server that cannot serve the WAL source.
func (f *Feed) checkServer(ctx context.Context, pc *pgconn.PgConn) error {
	rows, err := simpleQuery(ctx, pc, fmt.Sprintf(`SELECT current_setting('wal_level'), current_setting('server_version_num'),
		EXISTS (SELECT FROM pg_publication WHERE pubname = %s)`, literal(f.cfg.publication)))
	if err != nil {
		return fmt.Errorf("pgfeed: ask the server its settings: %w", err)
	}
	if len(rows) != 1 || len(rows[0]) != 3 {
		return fmt.Errorf("pgfeed: ask the server its settings: an answer of %d rows", len(rows))
	}
	level, version, published := string(rows[0][0]), string(rows[0][1]), string(rows[0][2]) == "t"
	if n, _ := strconv.Atoi(version); n < minServerVersion*10000 {
		return fmt.Errorf("%w: it needs PostgreSQL %d or later, and the server is version %s", errCannotServe, minServerVersion, version)
	}
	if level != "logical" {
		return fmt.Errorf("%w: wal_level is %s, and it needs logical (ALTER SYSTEM SET wal_level = logical, then restart the server; docs/many-instances.md lists managed services' settings)", errCannotServe, level)
	}
	if !published {
		return fmt.Errorf("%w: publication %s does not exist (Feed.Install creates it)", errCannotServe, f.cfg.publication)
	}
	return nil
}

// stream delivers what the server sends until the connection fails or ctx
// ends. It tells the server its position every status interval, asking
// for an answer: a server that stays silent longer than that and the ping
// timeout is taken for gone.
func (f *Feed) stream(ctx context.Context, pc *pgconn.PgConn, sink adapter.ChangeSink) error {
	dec := newWALDecoder(f.cfg)
	interval, silence := f.cfg.statusInterval, f.cfg.statusInterval+pingTimeout
	lastHeard := time.Now()
	nextStatus := lastHeard.Add(interval)
	nextSweep := lastHeard.Add(sweepEvery(f.cfg.slotExpiry))
	var wait waitUntil
	defer wait.stop()
	for {
		now := time.Now()
		if !now.Before(nextStatus) {
			if err := f.sendStatus(pc, true); err != nil {
				return err
			}
			nextStatus = now.Add(interval)
		}
		if !now.Before(nextSweep) {
			f.sweepAside(ctx)
			nextSweep = time.Now().Add(sweepEvery(f.cfg.slotExpiry))
		}
		if now.Sub(lastHeard) > silence {
			return fmt.Errorf("pgfeed: replication connection lost: no word from the server for %v", now.Sub(lastHeard).Round(time.Millisecond))
		}
		// Waking at the next status at the latest also checks the
		// silence, which is longer.
		rctx := wait.until(ctx, earliest(nextStatus, nextSweep))
		msg, err := pc.ReceiveMessage(rctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			// So that the server keeps the latest position: Close drops
			// the slot, but a Run started again resumes from it.
			f.sendStatus(pc, false)
			return ctx.Err()
		case pgconn.Timeout(err) || rctx.Err() != nil:
			continue
		default:
			return fmt.Errorf("pgfeed: replication connection lost: %w", err)
		}
		lastHeard = time.Now()
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := f.received(ctx, pc, dec, m.Data, sink); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("pgfeed: replication: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return errors.New("pgfeed: replication: the server ended the stream")
		}
	}
}

// received handles one message of the stream: a keepalive, or a piece of
// the log.
func (f *Feed) received(ctx context.Context, pc *pgconn.PgConn, dec *walDecoder, data []byte, sink adapter.ChangeSink) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("pgfeed: replication: %w", err)
		}
		f.wal.serverEnd = max(f.wal.serverEnd, k.ServerWALEnd)
		caughtUp := false
		if !dec.open && k.ServerWALEnd >= f.wal.confirmed {
			// Everything before the end the server names has been sent,
			// and received, in order, and no transaction is half read:
			// nothing left to deliver before it. Confirming it lets the
			// server recycle the log of other tables' writes.
			f.wal.confirmed, caughtUp = k.ServerWALEnd, true
			f.heardUpTo(k.ServerWALEnd, sink)
		}
		f.updateLag(caughtUp, time.Time{})
		if k.ReplyRequested {
			return f.sendStatus(pc, false)
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("pgfeed: replication: %w", err)
		}
		f.wal.serverEnd = max(f.wal.serverEnd, x.ServerWALEnd)
		d, ok, err := dec.decode(x.WALData)
		if err != nil {
			return err
		}
		if ok {
			if !d.empty() {
				switch sure := f.awaitVisible(ctx, d.xid); {
				case !sure:
					f.wal.doubted = true
					f.hearing.Store(false)
				case f.wal.doubted:
					// Sure again: re-run everything once, since what
					// the doubted transactions changed may have been
					// re-run before it could be read.
					f.wal.doubted, f.wal.allOnHearing = false, true
				}
			}
			f.deliverWAL(d, sink)
		}
	}
	return nil
}

// deliverWAL hands a transaction (or a message outside one) to the sink,
// and only then counts it confirmed.
func (f *Feed) deliverWAL(d walDelivery, sink adapter.ChangeSink) {
	if d.problem != nil {
		f.cfg.logger.Warn("pgfeed: re-running all live queries", "slot", f.wal.slot, "error", d.problem)
	}
	switch {
	case d.all:
		sink.ChangedAll()
	case len(d.keys) > 0:
		sink.Changed(d.keys...)
	}
	if d.end > f.wal.confirmed {
		f.wal.confirmed = d.end
	}
	f.heardUpTo(f.wal.confirmed, sink)
	f.health.update(func(h *Health) {
		h.Received++
		h.LastNotification = time.Now()
	})
	f.updateLag(false, d.commit)
}

// heardUpTo notes that every transaction before lsn was delivered: the
// feed hears once that reaches where the log ended when it connected, and
// no delivery is in doubt. Then, if asked to, every live query runs again,
// after it hears, so that what they keep is current.
func (f *Feed) heardUpTo(lsn pglogrepl.LSN, sink adapter.ChangeSink) {
	if lsn < f.wal.hearFrom || f.wal.doubted || f.hearing.Load() {
		return
	}
	f.hearing.Store(true)
	if f.wal.allOnHearing {
		f.wal.allOnHearing = false
		sink.ChangedAll()
	}
}

// updateLag records the feed's position and its distance from the
// server's end of the log; commit, when not zero, is when the transaction
// just delivered committed.
func (f *Feed) updateLag(caughtUp bool, commit time.Time) {
	confirmed, end := f.wal.confirmed, f.wal.serverEnd
	f.health.update(func(h *Health) {
		h.Confirmed = LSN(confirmed)
		h.LagBytes = 0
		if end > confirmed {
			h.LagBytes = int64(end - confirmed)
		}
		switch {
		case caughtUp:
			h.LagSeconds = 0
		case !commit.IsZero():
			h.LagSeconds = max(time.Since(commit).Seconds(), 0)
		}
	})
}

// sendStatus tells the server how far the feed has delivered, which the
// slot keeps, and, with reply, asks for a keepalive in return.
func (f *Feed) sendStatus(pc *pgconn.PgConn, reply bool) error {
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), pc, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: f.wal.confirmed,
		ReplyRequested:   reply,
	})
	if err != nil {
		return fmt.Errorf("pgfeed: replication: send status: %w", err)
	}
	return nil
}

// closePgConn closes pc and waits until pgconn has released everything it
// holds, as closeConn does for a pgx.Conn.
func closePgConn(pc *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	pc.Close(ctx)
	<-pc.CleanupDone()
}

// waitUntil is a context that ends at a deadline, made again only when the
// deadline changes or passes: one for each message would cost a timer
// each.
type waitUntil struct {
	ctx      context.Context
	cancel   context.CancelFunc
	deadline time.Time
}

// until returns a context of parent that ends at deadline.
func (w *waitUntil) until(parent context.Context, deadline time.Time) context.Context {
	if w.ctx == nil || w.ctx.Err() != nil || !deadline.Equal(w.deadline) {
		w.stop()
		w.ctx, w.cancel = context.WithDeadline(parent, deadline)
		w.deadline = deadline
	}
	return w.ctx
}

func (w *waitUntil) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

// earliest returns the earliest of ts.
func earliest(ts ...time.Time) time.Time {
	e := ts[0]
	for _, t := range ts[1:] {
		if t.Before(e) {
			e = t
		}
	}
	return e
}
