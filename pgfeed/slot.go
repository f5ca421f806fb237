package pgfeed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A WAL feed reads the log through a replication slot of its own, named
// after its instance id. The slot is permanent, not temporary: a temporary
// slot ends with its connection, and a feed whose connection dropped could
// then not resume where it stopped. A permanent slot keeps the server from
// recycling the log the feed has not confirmed, for as long as the slot
// exists, which bounds it three ways:
//
//   - Close drops the slot: an instance that stops cleanly keeps nothing;
//   - every running feed drops the slots of the other instances of its
//     database that it saw unused for the slot expiry (sweep): an instance
//     that died keeps the log that long, and no longer, while another
//     instance runs;
//   - the server's max_slot_wal_keep_size, when set, invalidates a slot
//     that holds more than that, whatever happens to the fleet.
//
// An instance that restarts is a new process with no live queries, and
// with a new instance id by default: it creates a new slot from the point
// where it starts and leaves the old one to the sweep.

// slotPrefix begins the name of every slot a WAL feed creates; a feed
// sweeps only slots named so.
const slotPrefix = "mcplive_"

// slotName is the slot of the feed with this instance id: the prefix and
// the id when the id is a valid slot name (lower-case letters, digits,
// underscores), as the default ids are; otherwise what is left of the id
// once cleaned, and a hash of it, so that two ids cannot share a slot.
func slotName(instance string) string {
	valid := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' }
	if len(slotPrefix)+len(instance) <= maxIdentifier && strings.IndexFunc(instance, func(r rune) bool { return !valid(r) }) < 0 {
		return slotPrefix + instance
	}
	var b strings.Builder
	for _, r := range strings.ToLower(instance) {
		if b.Len() == 32 {
			break
		}
		if !valid(r) {
			r = '_'
		}
		b.WriteRune(r)
	}
	sum := sha256.Sum256([]byte(instance))
	return slotPrefix + b.String() + "_" + hex.EncodeToString(sum[:4])
}

// sweepEvery is how often a feed looks for unused slots: five times per
// expiry, so that a slot is dropped within a fifth of the expiry past it,
// and at most once a minute.
func sweepEvery(expiry time.Duration) time.Duration {
	return min(max(expiry/5, 200*time.Millisecond), time.Minute)
}

// simpleQuery runs sql with the simple protocol, the only one a
// replication connection speaks, and returns the rows of its results as
// text.
func simpleQuery(ctx context.Context, pc *pgconn.PgConn, sql string) ([][][]byte, error) {
	results, err := pc.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	var rows [][][]byte
	for _, r := range results {
		if r.Err != nil {
			return nil, r.Err
		}
		rows = append(rows, r.Rows...)
	}
	return rows, nil
}

// slotState is what the server says of the feed's slot.
type slotState struct {
	exists bool
	active uint32 // the process using it; 0 when unused
	// lost: the server invalidated it (max_slot_wal_keep_size): the log
	// it needs is gone.
	lost bool
}

func (f *Feed) slotState(ctx context.Context, pc *pgconn.PgConn) (slotState, error) {
	rows, err := simpleQuery(ctx, pc, fmt.Sprintf(`SELECT database = current_database(), coalesce(active_pid, 0), coalesce(wal_status, '')
		FROM pg_replication_slots WHERE slot_name = %s`, literal(f.wal.slot)))
	if err != nil {
		return slotState{}, fmt.Errorf("pgfeed: look up replication slot %s: %w", f.wal.slot, err)
	}
	if len(rows) == 0 {
		return slotState{}, nil
	}
	if string(rows[0][0]) != "t" {
		return slotState{}, fmt.Errorf("%w: replication slot %s belongs to another database (instance id %q used twice?)", errCannotServe, f.wal.slot, f.cfg.instance)
	}
	var pid uint32
	fmt.Sscan(string(rows[0][1]), &pid)
	return slotState{exists: true, active: pid, lost: string(rows[0][2]) == "lost"}, nil
}

// ensureSlot makes sure the feed has a slot to stream from, and reports
// whether it had to start a new one after it had one: the changes since
// the old one's position are then unknown (fallback).
func (f *Feed) ensureSlot(ctx context.Context, pc *pgconn.PgConn) (fallback bool, err error) {
	st, err := f.freeSlot(ctx, pc)
	if err != nil {
		return false, err
	}
	switch {
	case st.exists && !st.lost && f.wal.created:
		return false, nil // resume
	case st.exists:
		// Invalidated, or left by an earlier process with this instance
		// id, whose live queries died with it: its position means
		// nothing to this one.
		if err := dropSlot(ctx, pc, f.wal.slot); err != nil {
			return false, err
		}
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, pc, f.wal.slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"})
	if err != nil {
		return false, fmt.Errorf("pgfeed: create replication slot %s: %w", f.wal.slot, err)
	}
	start, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return false, fmt.Errorf("pgfeed: create replication slot %s: its position %q: %w", f.wal.slot, res.ConsistentPoint, err)
	}
	fallback = f.wal.created
	f.wal.created, f.wal.confirmed, f.wal.serverEnd = true, start, start
	return fallback, nil
}

// freeSlot returns the state of the feed's slot, once no connection of
// this feed's uses it. The server process of the feed's last connection
// may still hold the slot: it ends some time after the connection closed,
// and after a cut network only once wal_sender_timeout passes. Ending it
// frees the slot now; the role may end its own processes. A slot in use by
// any other process is an error: two feeds share an instance id.
func (f *Feed) freeSlot(ctx context.Context, pc *pgconn.PgConn) (slotState, error) {
	st, err := f.slotState(ctx, pc)
	if err != nil || st.active == 0 {
		return st, err
	}
	if st.active != f.wal.lastPID {
		return st, fmt.Errorf("pgfeed: replication slot %s is in use by server process %d: is another feed running with instance id %q?", f.wal.slot, st.active, f.cfg.instance)
	}
	if _, err := simpleQuery(ctx, pc, fmt.Sprintf(`SELECT pg_terminate_backend(%d, %d)`, st.active, pingTimeout.Milliseconds())); err != nil {
		return st, fmt.Errorf("pgfeed: end the previous replication connection (process %d): %w", st.active, err)
	}
	st.active = 0
	return st, nil
}

func dropSlot(ctx context.Context, pc *pgconn.PgConn, slot string) error {
	if _, err := simpleQuery(ctx, pc, fmt.Sprintf(`SELECT pg_drop_replication_slot(%s)`, literal(slot))); err != nil {
		return fmt.Errorf("pgfeed: drop replication slot %s: %w", slot, err)
	}
	return nil
}

// sweep drops the slots of other feeds of this database that stayed
// unused for the slot expiry. PostgreSQL 17 and later say since when a
// slot is unused (inactive_since); before that the feed notes when it
// first saw each one unused, and drops it once it has seen it unused for
// the whole expiry, never in use in between. A slot in use when the feed
// drops it is not dropped (the server refuses): its feed came back.
func (f *Feed) sweep(ctx context.Context, pc *pgconn.PgConn) error {
	expiry := f.cfg.slotExpiry
	// to_jsonb: inactive_since is a column only from PostgreSQL 17 on.
	rows, err := simpleQuery(ctx, pc, fmt.Sprintf(`SELECT slot_name, active,
		coalesce((to_jsonb(s) ->> 'inactive_since')::timestamptz < now() - interval '%d milliseconds', false)
		FROM pg_replication_slots AS s
		WHERE slot_type = 'logical' AND plugin = 'pgoutput' AND database = current_database()
		AND starts_with(slot_name, %s) AND slot_name <> %s`,
		expiry.Milliseconds(), literal(slotPrefix), literal(f.wal.slot)))
	if err != nil {
		return fmt.Errorf("pgfeed: look for unused replication slots: %w", err)
	}
	now := time.Now()
	seen := make(map[string]bool, len(rows))
	for _, row := range rows {
		name, active, expired := string(row[0]), string(row[1]) == "t", string(row[2]) == "t"
		seen[name] = true
		if active {
			delete(f.wal.unused, name)
			continue
		}
		since, noted := f.wal.unused[name]
		if !noted {
			f.wal.unused[name] = now
		}
		if !expired && (!noted || now.Sub(since) < expiry) {
			continue
		}
		if err := dropSlot(ctx, pc, name); err != nil {
			f.cfg.logger.Debug("pgfeed: an unused replication slot was not dropped", "slot", name, "error", err)
			continue
		}
		delete(f.wal.unused, name)
		f.health.update(func(h *Health) { h.SlotsDropped++ })
		f.cfg.logger.Info("pgfeed: dropped the replication slot of an instance gone for longer than the slot expiry",
			"slot", name, "expiry", expiry)
	}
	for name := range f.wal.unused {
		if !seen[name] {
			delete(f.wal.unused, name)
		}
	}
	return nil
}

// sweepAside sweeps on the publishing connection, while the replication
// connection streams (and speaks no SQL). Failures are logged: the next
// sweep tries again.
func (f *Feed) sweepAside(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err := f.onSide(ctx, func(conn *pgx.Conn) error { return f.sweep(ctx, conn.PgConn()) })
	if err != nil && ctx.Err() == nil {
		f.cfg.logger.Warn("pgfeed: looking for unused replication slots", "error", err)
	}
}

// dropOwnSlot drops the feed's slot, for Close: the server then keeps no
// log for it. Call it holding pubSem, with Run returned.
func (f *Feed) dropOwnSlot() {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	conn := f.pubConn
	if conn == nil {
		var err error
		if conn, err = pgx.ConnectConfig(ctx, f.pubCfg); err != nil {
			f.cfg.logger.Warn("pgfeed: the replication slot stays until another instance drops it", "slot", f.wal.slot, "error", err)
			return
		}
		defer closeConn(conn)
	}
	st, err := f.freeSlot(ctx, conn.PgConn())
	if err == nil && st.exists {
		err = dropSlot(ctx, conn.PgConn(), f.wal.slot)
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42704": // undefined_object: dropped meanwhile
	case err != nil:
		f.cfg.logger.Warn("pgfeed: the replication slot stays until another instance drops it", "slot", f.wal.slot, "error", err)
	default:
		f.wal.created = false
	}
}
