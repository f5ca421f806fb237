package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for database/sql

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/pgfeed"
)

// With -postgres URL the example keeps its data in PostgreSQL, and any number
// of instances of it can serve the same database behind a load balancer. A
// write through one instance must then reach the subscribers of all of them,
// and so must a write made without the example (by psql, say). A pgfeed.Feed
// does it, from one of two sources (-feed):
//
//   - notify, the default: every Changed goes to the other instances with
//     NOTIFY, and triggers report every write to the tables. It runs on any
//     PostgreSQL, which is why it is the default of an example that is
//     pointed at whatever database is at hand; the triggers cost every write
//     (docs/many-instances.md has the figures).
//   - wal: every instance reads the committed writes from the write-ahead
//     log; writes pay nothing for it, and an instance that loses its
//     connection catches up rather than re-run everything. It needs
//     wal_level=logical and a role with REPLICATION: what to run in
//     production, once the database allows it.
//
// docs/many-instances.md explains how to operate either.

// feedTables are the tables the live commands read, with the id column that
// names a row in their keys ("customers/12", as commands.go reports them).
// A write to a row is reported by its key alone, which reaches the
// customers_show of that row and the lists and searches, which read the
// whole table.
var feedTables = []pgfeed.TableSpec{
	{Table: tableCustomers, IDColumn: "id"},
	{Table: tableOrders, IDColumn: "id"},
}

// openPostgresInstance opens the database at url, creating and seeding its
// tables if need be, prepares them for the feed's source (the triggers or
// the publication), and builds the MCP server with its change feed running.
// It returns once the feed listens, so that no change another instance makes
// after that is missed.
func openPostgresInstance(ctx context.Context, url string, source pgfeed.Source, logger *slog.Logger, opts ...adapter.Option) (*instance, error) {
	st, err := openPostgres(ctx, url)
	if err != nil {
		return nil, err
	}
	feed := pgfeed.New(url, pgfeed.WithSource(source), pgfeed.WithTables(feedTables...), pgfeed.WithLogger(logger))
	if err := installFeed(ctx, url, feed); err != nil {
		st.Close()
		return nil, err
	}

	a := newAdapter(st, logger, append(opts, adapter.WithChangeFeed(feed))...)
	// The feed runs until Close, not until ctx ends: it must outlive the
	// requests that a graceful shutdown lets finish. Run reconnects by
	// itself whenever the connection drops. Stopping it (Close, after Run
	// returned) drops a WAL feed's replication slot; the slot of an
	// instance killed without it is dropped by the others after five
	// minutes unused (pgfeed.WithSlotExpiry).
	runCtx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- feed.Run(runCtx) }()
	stop := func() {
		cancel()
		<-ran
		feed.Close()
	}

	select {
	case <-feed.Ready():
		return &instance{st: st, a: a, feed: feed, stop: stop}, nil
	case err = <-ran: // it could not start: a malformed URL, or no wal_level=logical for -feed wal
		cancel()
		feed.Close()
	case <-ctx.Done():
		stop()
		err = ctx.Err()
	}
	st.Close()
	return nil, err
}

// openPostgres opens the PostgreSQL database at url through pgx's
// database/sql driver, creates the schema and seeds the demo data if it is
// empty.
func openPostgres(ctx context.Context, url string) (*store, error) {
	db, err := sql.Open(postgresDialect.driver, url)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	// Keep open as many connections as the adapter runs re-runs at once
	// (Adapter.Changed), rather than database/sql's 2: after a change, the
	// re-runs beyond 2 would each open a connection and close it again.
	// And open no more: PostgreSQL serves each connection with a process
	// of its own and refuses more than max_connections (100 by default)
	// across every instance and client, while reads come as fast as agents
	// send them. Without a cap a burst of reads opens a connection for
	// each, and three instances under 300 busy sessions stalled for
	// seconds connecting. Reads beyond the cap wait for a connection.
	db.SetMaxOpenConns(postgresConns())
	db.SetMaxIdleConns(postgresConns())
	st := &store{db: db, d: postgresDialect}
	if err := st.requireUTF8(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := st.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	return st, nil
}

// postgresConns is how many connections to PostgreSQL an instance keeps
// open at most, besides the two of its change feed.
func postgresConns() int { return 4 * runtime.GOMAXPROCS(0) }

// requireUTF8 refuses a database whose encoding is not UTF8: fold_case
// (fold.go) works on characters, and names may hold any of them.
func (s *store) requireUTF8(ctx context.Context) error {
	var encoding string
	if err := s.db.QueryRowContext(ctx, `SHOW server_encoding`).Scan(&encoding); err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	if encoding != "UTF8" {
		return fmt.Errorf("PostgreSQL: the database's encoding is %s; the example needs UTF8 (createdb -E UTF8 -T template0)", encoding)
	}
	return nil
}

// installFeed makes every write to the tables reach the feeds, whoever
// makes it: triggers for notify, a publication for wal. Installing is
// idempotent: every instance does it when it starts. It needs a pgx
// connection of its own, which it closes.
func installFeed(ctx context.Context, url string, feed *pgfeed.Feed) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("install the change feed: %w", err)
	}
	err = feed.Install(ctx, conn)
	return errors.Join(err, conn.Close(ctx))
}
