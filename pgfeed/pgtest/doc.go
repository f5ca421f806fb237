// Package pgtest starts throwaway PostgreSQL servers for tests: those of
// pgfeed, and those of programs that use it. It is part of the pgfeed module,
// whose requirements (pgx) it shares, so that a module requiring pgfeed takes
// in no module of tests besides; a program that does not import it builds
// none of it.
//
// It needs the server binaries (initdb, pg_ctl, postgres) of a local
// PostgreSQL installation, such as Debian's "postgresql" package, which puts
// them in /usr/lib/postgresql/<version>/bin. When they are missing, tests that
// ask for a server are skipped, unless the environment variable
// MCPLIVE_REQUIRE_POSTGRES=1 is set (as in CI), which turns the skip into a
// failure so that a broken installation cannot pass silently.
//
// The server listens on a free loopback port only, keeps its data and its
// Unix socket in a temporary directory, and runs with fsync off: it exists for
// the duration of a test (Start) or of a test binary (StartShared with
// WithShared), and is stopped with "pg_ctl stop -m immediate" afterwards.
//
// When the tests run as root, initdb and pg_ctl run as the "postgres" OS user
// (which the Debian package creates), because PostgreSQL refuses to run as
// root.
package pgtest
