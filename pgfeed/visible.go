package pgfeed

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// A transaction reaches the log, and the feed, before other sessions can
// see what it wrote. PostgreSQL commits in this order: the commit record
// is written and flushed, which wakes the WAL senders, and only then does
// the committing process leave the list of running transactions, which is
// what makes its writes visible to new snapshots. (NOTIFY is delivered
// after both, which is why the NOTIFY source never met this.) A re-run
// made in between reads the rows as they were, finds its result
// unchanged, and the subscribers never hear of the write. So a WAL feed
// delivers a transaction only once a new snapshot sees it as complete.
//
// Asking costs a round trip on the publishing connection. The answer says
// more than asked: every transaction the snapshot saw complete stays
// complete, so the feed keeps the last snapshot and asks again only for a
// transaction it does not cover. While the feed reads behind the writers
// (as it does under load) one answer covers many transactions, and only a
// feed that has caught up asks for each.

// unsureFor is how long the feed delivers without asking after a question
// failed (the publishing connection cannot be made, say): asking again at
// every transaction would hold each one up for a connection timeout.
const unsureFor = time.Second

// visibleWait bounds the wait for one transaction. Only a server that
// holds a committed transaction from its readers (a synchronous standby
// that does not answer) makes it run out; the feed then delivers the
// transaction anyway, logged, rather than hold up every one behind it.
const visibleWait = 10 * time.Second

// awaitVisible returns once transaction xid, which committed, is visible
// to new snapshots, or, logged, when it cannot tell: then it reports
// false, and a re-run of what xid changed may still read what came before.
func (f *Feed) awaitVisible(ctx context.Context, xid uint32) (sure bool) {
	if xid == 0 || f.wal.snapKnown && f.wal.snap.completed(xid) {
		return true
	}
	if time.Now().Before(f.wal.unsureUntil) {
		return false
	}
	delay := 50 * time.Microsecond
	deadline := time.Now().Add(visibleWait)
	for {
		snap, err := f.currentSnapshot(ctx)
		if err != nil {
			if ctx.Err() == nil {
				f.wal.unsureUntil = time.Now().Add(unsureFor)
				f.cfg.logger.Warn("pgfeed: could not make sure transactions are visible before re-running what they changed; delivering without asking for a second",
					"xid", xid, "error", err)
			}
			return false
		}
		f.wal.snap, f.wal.snapKnown = snap, true
		if snap.completed(xid) {
			return true
		}
		if delay == 50*time.Microsecond {
			f.waits.Add(1)
		}
		if !time.Now().Before(deadline) {
			f.cfg.logger.Warn("pgfeed: a committed transaction is still invisible; re-running what it changed anyway",
				"xid", xid, "waited", visibleWait)
			return false
		}
		if !sleep(ctx, delay) {
			return false
		}
		delay = min(2*delay, 5*time.Millisecond)
	}
}

// currentSnapshot asks the server for a snapshot, on the publishing
// connection.
func (f *Feed) currentSnapshot(ctx context.Context) (pgSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var rows [][][]byte
	err := f.onSide(ctx, func(conn *pgx.Conn) error {
		// The simple protocol: one message each way, where a prepared
		// statement's takes four.
		var err error
		rows, err = simpleQuery(ctx, conn.PgConn(), `SELECT pg_current_snapshot()::text`)
		return err
	})
	if err != nil {
		return pgSnapshot{}, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return pgSnapshot{}, fmt.Errorf("pgfeed: a snapshot of %d rows", len(rows))
	}
	return parseSnapshot(string(rows[0][0]))
}

// pgSnapshot is what a snapshot says of transaction ids (32 bits of them,
// as the log names transactions): every id before xmin has completed,
// every id from xmax on had not, and those in xip were running.
type pgSnapshot struct {
	xmin, xmax uint32
	xip        []uint32
}

// parseSnapshot reads pg_current_snapshot()'s text: "xmin:xmax:xip,xip".
func parseSnapshot(s string) (pgSnapshot, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return pgSnapshot{}, fmt.Errorf("pgfeed: a snapshot %.60q", s)
	}
	id := func(s string) (uint32, error) {
		n, err := strconv.ParseUint(s, 10, 64)
		return uint32(n), err // the low 32 bits: the id, without its epoch
	}
	var snap pgSnapshot
	var err1, err2 error
	snap.xmin, err1 = id(parts[0])
	snap.xmax, err2 = id(parts[1])
	if err1 != nil || err2 != nil {
		return pgSnapshot{}, fmt.Errorf("pgfeed: a snapshot %.60q", s)
	}
	if parts[2] != "" {
		for _, p := range strings.Split(parts[2], ",") {
			x, err := id(p)
			if err != nil {
				return pgSnapshot{}, fmt.Errorf("pgfeed: a snapshot %.60q", s)
			}
			snap.xip = append(snap.xip, x)
		}
	}
	return snap, nil
}

// completed reports whether transaction xid had completed when the
// snapshot was taken.
func (s pgSnapshot) completed(xid uint32) bool {
	return xidBefore(xid, s.xmin) || xidBefore(xid, s.xmax) && !slices.Contains(s.xip, xid)
}

// xidBefore compares transaction ids as PostgreSQL does, modulo 2^32:
// they wrap around.
func xidBefore(a, b uint32) bool { return int32(a-b) < 0 }
