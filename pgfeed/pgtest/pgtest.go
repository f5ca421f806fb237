package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// RequireEnv is the environment variable that turns "PostgreSQL is not
// installed" from a skip into a failure. CI sets it to 1.
const RequireEnv = "MCPLIVE_REQUIRE_POSTGRES"

const skipMessage = "PostgreSQL binaries not found (apt-get install postgresql); set " + RequireEnv + "=1 to fail instead"

// Start starts a new throwaway server for this test alone and returns a
// connection string for its "postgres" database. The server is stopped when
// the test ends. It skips the test when PostgreSQL is not installed (see the
// package documentation).
//
// Starting a server takes a second or two; tests that can share one should
// use StartShared.
func Start(t testing.TB) (connString string) {
	t.Helper()
	bins := requireBinaries(t)
	c, err := startCluster(bins)
	if err != nil {
		t.Fatalf("pgtest: start PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("pgtest: stop PostgreSQL: %v", err)
		}
	})
	return c.connString("postgres")
}

// M is what a TestMain runs: *testing.M, or a wrapper of it such as the one
// WithShared returns.
type M interface {
	Run() int
}

// WithShared wraps a package's tests so that StartShared can share one
// server among all of them and stop it after the last. Use it in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.WithShared(m).Run()) }
//
// or, with goleak, goleak.VerifyTestMain(pgtest.WithShared(m)).
func WithShared(m M) M {
	return sharedRunner{m}
}

type sharedRunner struct{ m M }

func (r sharedRunner) Run() int {
	shared.managed.Store(true)
	code := r.m.Run()
	shared.managed.Store(false)
	if c := shared.cluster; c != nil {
		if err := c.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop shared PostgreSQL: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// shared is the one server of a test binary. It is package state because
// TestMain and the tests have nothing else in common; the Once makes the
// first test that needs it start it.
var shared struct {
	once    sync.Once
	cluster *cluster
	err     error
	managed atomic.Bool  // WithShared is running the tests and will stop the server
	dbSeq   atomic.Int64 // names the databases StartShared creates
}

// StartShared returns a connection string for a new, empty database on the
// server shared by the whole test binary, starting the server on first use.
// A database of its own keeps the test's tables, triggers and LISTEN/NOTIFY
// channels (which are per database) apart from the other tests'.
//
// Sharing needs TestMain to run the tests through WithShared, which stops
// the server at the end; without it StartShared falls back to Start, so that
// no server outlives the test binary.
func StartShared(t testing.TB) (connString string) {
	t.Helper()
	bins := requireBinaries(t)
	if !shared.managed.Load() {
		return Start(t)
	}
	shared.once.Do(func() {
		shared.cluster, shared.err = startCluster(bins)
	})
	if shared.err != nil {
		t.Fatalf("pgtest: start shared PostgreSQL: %v", shared.err)
	}
	name := fmt.Sprintf("test_%d", shared.dbSeq.Add(1))
	if err := createDatabase(shared.cluster, name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return shared.cluster.connString(name)
}

func createDatabase(c *cluster, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.connString("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// requireBinaries finds the PostgreSQL programs or ends the test: skipped
// normally, failed when RequireEnv is set.
func requireBinaries(t testing.TB) binaries {
	t.Helper()
	bins, ok := findBinaries()
	if ok {
		return bins
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(skipMessage)
	}
	t.Skip(skipMessage)
	return binaries{}
}
