package pgfeed

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// notifySQL sends every payload in one statement: one round trip, and one
// implicit transaction, so a split key list arrives whole or not at all.
const notifySQL = "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p"

// emitSQL is notifySQL for the WAL source: transactional messages in the
// log, which every feed reads at the statement's commit, together.
const emitSQL = "SELECT pg_logical_emit_message(true, $1, p) FROM unnest($2::text[]) AS p"

// maxMessage is the longest message a WAL feed reads; one longer makes it
// re-run everything. maxMessagePayload is the longest it writes: key lists
// longer than that are widened and split as for NOTIFY.
const (
	maxMessage        = 1 << 20
	maxMessagePayload = 64 << 10
)

// Publish implements adapter.ChangeFeed: it tells the other instances that
// keys changed.
//
// A WAL feed sends nothing for the keys of its tables (WithTables): the
// write that changed them is in the log, which every feed reads, so every
// instance hears it, this one included. The other keys it writes to the
// log as a message (pg_logical_emit_message, with the feed's channel as
// prefix), which every other feed reads in its place among the
// transactions, and resumes reading after a reconnection as it does them.
// Key lists are widened and split as for NOTIFY, at 64 KiB a message.
//
// A NOTIFY feed sends them with pg_notify on the feed's channel. This
// instance's own Run skips the notification. Key lists too long for one notification are
// widened to their tables, and split if need be (see the package
// documentation). A table key too long for any notification, or one that
// is not valid UTF-8, is sent as the empty payload instead, which names no
// instance: every instance re-runs all its live queries, this one's Run
// too.
//
// Publish does not go through Run's connection, which is blocked waiting
// for notifications. It uses one connection of its own, opened on first use
// and reopened after an error (a Publish that finds the connection it kept
// broken sends again, once, on a new one), and one Publish at a time: a
// notification is a single short round trip, so one connection carries
// thousands a second, and taking turns delivers an instance's changes in the
// order it made them. Publish returns when the notification is sent, when ctx ends, or
// after the publish timeout (WithPublishTimeout), whichever comes first,
// including while it waits for its turn.
//
// PostgreSQL delivers a notification sent outside a transaction at once.
// Call Publish after the write commits (the adapter's Changed is meant to be
// called then), or listeners may re-run before they can see the write.
func (f *Feed) Publish(ctx context.Context, keys []string) error {
	if f.cfgErr != nil {
		return f.cfgErr
	}
	limit := maxPayload
	if f.cfg.source == WAL {
		keys, limit = f.unlogged(keys), maxMessagePayload
	}
	if len(keys) == 0 {
		return nil
	}
	return f.notify(ctx, encodePayloads(f.cfg.instance, keys, limit), fmt.Sprintf("%d key(s)", len(keys)))
}

// unlogged returns the keys no table of the feed names: those the log
// does not carry by itself.
func (f *Feed) unlogged(keys []string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		table, _, _ := strings.Cut(k, "/")
		return slices.ContainsFunc(f.cfg.tables, func(t TableSpec) bool { return t.key() == table })
	})
}

// PublishAll implements adapter.ChangeFeedAll: it tells every instance that
// anything may have changed, with the empty payload (a notification, or a
// message in the log), which makes each re-run all its live queries (this
// instance's Run too: the empty payload names no instance to skip). The
// adapter calls it when local changes pile up beyond what it keeps while a
// Publish is slow. It is sent as Publish's notifications are, with the
// same connection, turns and timeout.
func (f *Feed) PublishAll(ctx context.Context) error {
	if f.cfgErr != nil {
		return f.cfgErr
	}
	return f.notify(ctx, []string{""}, "everything")
}

// notify sends payloads on the feed's channel, or as messages in the log
// for WAL, in one statement, for Publish and PublishAll; what names what
// they carry, for errors.
func (f *Feed) notify(ctx context.Context, payloads []string, what string) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.publishTimeout)
	defer cancel()
	select {
	case f.pubSem <- struct{}{}:
	case <-ctx.Done():
		return f.publishFailed(fmt.Errorf("pgfeed: publish: waiting for the connection: %w", ctx.Err()))
	}
	defer func() { <-f.pubSem }()

	if f.closed {
		return ErrClosed
	}
	// A connection kept from an earlier Publish may have died meanwhile
	// (a server restart, an idle timeout): the first attempt to use it
	// is how Publish finds out. Nothing would make the other instances
	// catch up on a change lost that way, so it is sent again, once, on a
	// fresh connection. If the first attempt did reach the server, the
	// other instances hear the change twice, which costs a re-run.
	sql := notifySQL
	if f.cfg.source == WAL {
		sql = emitSQL
	}
	for {
		fresh := f.pubConn == nil
		if fresh {
			conn, err := pgx.ConnectConfig(ctx, f.pubCfg)
			if err != nil {
				return f.publishFailed(fmt.Errorf("pgfeed: publish: connect: %w", err))
			}
			f.pubConn = conn
		}
		_, err := f.pubConn.Exec(ctx, sql, f.cfg.channel, payloads)
		if err == nil {
			break
		}
		// Whatever went wrong, a fresh connection is the safe next step.
		f.dropPubConn()
		if fresh || ctx.Err() != nil {
			return f.publishFailed(fmt.Errorf("pgfeed: publish %s on channel %q: %w", what, f.cfg.channel, err))
		}
	}
	f.health.update(func(h *Health) { h.Published += int64(len(payloads)) })
	return nil
}

func (f *Feed) publishFailed(err error) error {
	f.health.failed(err)
	return err
}
