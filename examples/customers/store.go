package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver: no cgo, nothing to install
)

// store is the application's database: customers and their orders in SQLite,
// or in PostgreSQL (postgres.go). It knows nothing about MCP; commands.go
// turns its methods into commands.
type store struct {
	db *sql.DB
	d  *dialect // what differs between the two databases (dialect.go)
}

// openStore opens the database at path, or a private in-memory database when
// path is "" or ":memory:", creates the schema and seeds the demo data if it
// is empty.
func openStore(ctx context.Context, path string) (*store, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	st := &store{db: db, d: sqliteDialect}
	if err := st.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
}

// openDB configures database/sql for SQLite.
//
// An in-memory database lives and dies with its connection, and database/sql
// keeps a pool: a second connection would open a second, empty database. So
// the pool holds exactly one connection, never recycled. database/sql hands it
// to one caller at a time, which makes concurrent reads and writes safe (they
// take turns; each query here is short).
//
// A file can be shared by many connections. WAL lets readers run while one
// writer writes (and, with synchronous=NORMAL, commits without waiting for
// the disk twice), busy_timeout makes a connection wait for a lock instead of
// failing, and _txlock=immediate takes the write lock when a transaction
// begins, so two writers queue up instead of deadlocking halfway through.
func openDB(path string) (*sql.DB, error) {
	// foreign_keys is a per-connection setting, hence in the DSN.
	const pragmas = "_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)"
	// ":memory:" is SQLite's own name for an in-memory database. Opened as
	// a file below, each connection of the pool would be a database of its
	// own, the first one seeded and the others empty.
	if path == "" || path == ":memory:" {
		db, err := sql.Open("sqlite", ":memory:?"+pragmas)
		if err != nil {
			return nil, fmt.Errorf("open in-memory database: %w", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		return db, nil
	}
	if strings.ContainsAny(path, "?#") {
		// The driver reads everything after '?' as options.
		return nil, fmt.Errorf("database path %q: must not contain '?' or '#'", path)
	}
	// "file:"+path is an SQLite URI, which percent-decodes the path: escape
	// '%' so that -db a%41.db opens a%41.db, not aA.db. Clean makes //tmp
	// /tmp: "file://tmp" would name a host.
	uriPath := strings.ReplaceAll(filepath.Clean(path), "%", "%25")
	db, err := sql.Open("sqlite", "file:"+uriPath+"?"+pragmas+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return db, nil
}

// init creates the schema and seeds an empty database, in one transaction so
// that a second process opening the same file never sees half the seed.
func (s *store) init(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.schema()); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM customers`).Scan(&n); err != nil {
			return fmt.Errorf("count customers: %w", err)
		}
		if n > 0 {
			return nil // an existing database keeps its data
		}
		if err := seed(ctx, tx, s.d); err != nil {
			return err
		}
		if s.d.afterSeed != "" {
			if _, err := tx.ExecContext(ctx, s.d.afterSeed); err != nil {
				return fmt.Errorf("after seed: %w", err)
			}
		}
		return nil
	})
}

// inTx runs fn in a transaction and commits it if fn returns nil.
func (s *store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, rollback(tx))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// ping reports whether the database answers; /healthz uses it.
func (s *store) ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close closes the database. An in-memory database is gone afterwards.
func (s *store) Close() error { return s.db.Close() }
