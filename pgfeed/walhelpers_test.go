package pgfeed_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcplive/adapter/pgfeed"
)

// quickBackoff makes a feed reconnect quickly, so that tests do not wait.
var quickBackoff = pgfeed.WithBackoff(10*time.Millisecond, 100*time.Millisecond)

// walFeed returns the options of a WAL feed of tables, quick to reconnect.
func walFeed(tables ...pgfeed.TableSpec) []pgfeed.Option {
	return []pgfeed.Option{pgfeed.WithSource(pgfeed.WAL), pgfeed.WithTables(tables...), quickBackoff}
}

// install runs Install of a feed made with opts, as every instance does
// at its start.
func install(t testing.TB, conn *pgx.Conn, opts ...pgfeed.Option) {
	t.Helper()
	if err := pgfeed.New("postgres://unused", opts...).Install(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
}

// emit writes a message to the log as Publish does and as any program
// may, on the default channel, flushed at once (the test server commits
// asynchronously, and a WAL feed reads only what is flushed).
func emit(t testing.TB, conn *pgx.Conn, payload string) {
	t.Helper()
	exec(t, conn, fmt.Sprintf(`SET LOCAL synchronous_commit = on; SELECT pg_logical_emit_message(true, %s, %s)`,
		quote(pgfeed.DefaultChannel), quote(payload)))
}

// flushed runs sql in one transaction that commits durably, so that a WAL
// feed hears it at once rather than when the server's WAL writer next
// flushes (the test server commits asynchronously).
func flushed(t testing.TB, conn *pgx.Conn, sql string) {
	t.Helper()
	exec(t, conn, "SET LOCAL synchronous_commit = on; "+sql)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// psql runs statements with the psql program, as a person at a terminal
// would, each -c its own transaction unless it says otherwise. Its
// commits are flushed at once (PGOPTIONS), as on a server with the
// default synchronous_commit.
func psql(t testing.TB, url string, statements ...string) {
	t.Helper()
	if err := psqlRun(psqlBinary(t), url, statements...); err != nil {
		t.Fatal(err)
	}
}

// psqlRun is psql for a goroutine of a test, which must not end it: it
// returns its error.
func psqlRun(bin, url string, statements ...string) error {
	args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url}
	for _, s := range statements {
		args = append(args, "-c", s)
	}
	cmd := osexec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c synchronous_commit=on")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("psql %q: %v\n%s", statements, err, out)
	}
	return nil
}

// psqlBinary finds psql, and skips (or fails) the test without it.
func psqlBinary(t testing.TB) string { return binary(t, "psql") }

// slots returns the names of the replication slots of the database conn
// is on, and whether each is in use.
func slots(t testing.TB, conn *pgx.Conn) map[string]bool {
	t.Helper()
	rows, err := conn.Query(context.Background(),
		`SELECT slot_name, active FROM pg_replication_slots WHERE database = current_database()`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for rows.Next() {
		var name string
		var active bool
		if err := rows.Scan(&name, &active); err != nil {
			t.Fatal(err)
		}
		out[name] = active
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually waits until cond holds, checking it every few milliseconds,
// or fails the test after wait saying what it waited for. For states of
// the server that nothing announces.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, wait)
		}
	}
}

// terminate ends a server process and waits until it is gone.
func terminate(t testing.TB, admin *pgx.Conn, pid uint32) {
	t.Helper()
	var killed bool
	err := admin.QueryRow(context.Background(), `SELECT pg_terminate_backend($1, $2)`, int32(pid), wait.Milliseconds()).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, killed, err)
	}
}
