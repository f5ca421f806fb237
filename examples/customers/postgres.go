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
// write through one instance must then reach the subscribers of all of them:
// a pgfeed.Feed carries every Changed to the other instances with NOTIFY, and
// triggers report the writes made without the example (by psql, say).
// docs/many-instances.md explains how to operate it.

// feedTables are the tables the live commands read, with the id column that
// names a row in their keys ("customers/12", as commands.go reports them).
var feedTables = []pgfeed.TableSpec{
	{Table: tableCustomers, IDColumn: "id"},
	{Table: tableOrders, IDColumn: "id"},
}

// openPostgresInstance opens the database at url, creating and seeding its
// tables if need be, installs the triggers, and builds the MCP server with its
// change feed running. It returns once the feed listens, so that no change
// another instance makes after that is missed.
func openPostgresInstance(ctx context.Context, url string, logger *slog.Logger, opts ...adapter.Option) (*instance, error) {
	st, err := openPostgres(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := installTriggers(ctx, url); err != nil {
		st.Close()
		return nil, err
	}

	feed := pgfeed.New(url, pgfeed.WithLogger(logger))
	a := newAdapter(st, logger, append(opts, adapter.WithChangeFeed(feed))...)
	// The feed runs until Close, not until ctx ends: it must outlive the
	// requests that a graceful shutdown lets finish. Run reconnects by
	// itself whenever the connection drops.
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
	case err = <-ran: // it could not start: a malformed URL
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

// installTriggers makes every write to the tables notify the feeds, whoever
// makes it. Installing is idempotent: every instance does it when it starts.
// It needs a pgx connection of its own, which it closes.
func installTriggers(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("install triggers: %w", err)
	}
	err = pgfeed.InstallTriggers(ctx, conn, "", feedTables...)
	return errors.Join(err, conn.Close(ctx))
}
