package pgfeed_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// The WAL source on a real server: every committed write to the tables,
// by psql or by the application, reaches every feed as one Changed per
// transaction, in commit order; a rolled-back one never does.
func TestWALHearsCommittedWrites(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	exec(t, sql, `CREATE SCHEMA "Odd Schema"`)
	exec(t, sql, `CREATE TABLE "Odd Schema"."Line ""Items""" ("Item Id" text PRIMARY KEY, qty int)`)
	exec(t, sql, `CREATE TABLE audit_log (at timestamptz DEFAULT now()) `)
	exec(t, sql, `ALTER TABLE audit_log REPLICA IDENTITY FULL`)
	exec(t, sql, `CREATE TABLE unwatched (id int PRIMARY KEY)`)
	opts := walFeed(
		pgfeed.TableSpec{Table: "customers", IDColumn: "id"},
		pgfeed.TableSpec{Schema: "Odd Schema", Table: `Line "Items"`, IDColumn: "Item Id", Key: "line_items"},
		pgfeed.TableSpec{Table: "audit_log"},
	)
	opts = append(opts, pgfeed.WithTransactionKeyLimit(50))
	install(t, sql, opts...)
	a, b := startFeed(t, url, opts...), startFeed(t, url, opts...)
	both := func(t *testing.T, keys ...string) {
		t.Helper()
		a.sink.expect(t, keys...)
		b.sink.expect(t, keys...)
	}

	psql(t, url, `INSERT INTO customers VALUES (1, 'Ada')`)
	both(t, "customers/1")
	flushed(t, sql, `INSERT INTO customers VALUES (2, 'Grace'), (3, 'Edsger')`)
	both(t, "customers/2", "customers/3")
	psql(t, url, `UPDATE customers SET name = name || '!'`) // three rows, one transaction
	both(t, "customers/1", "customers/2", "customers/3")
	psql(t, url, `UPDATE customers SET id = 4 WHERE id = 1`) // the key changes: both rows
	both(t, "customers/1", "customers/4")
	psql(t, url, `DELETE FROM customers WHERE id = 2`)
	both(t, "customers/2")
	psql(t, url, `BEGIN`, `INSERT INTO customers VALUES (5, 'Barbara')`, `INSERT INTO "Odd Schema"."Line ""Items""" VALUES ('a/b ''c''', 1)`, `COMMIT`)
	both(t, "customers/5", "line_items/a/b 'c'")
	psql(t, url, `INSERT INTO audit_log DEFAULT VALUES`, `DELETE FROM audit_log`) // no id column: the table
	both(t, "audit_log")
	both(t, "audit_log")

	// Rolled back, or never of a watched table: never heard. The message
	// after them arrives after anything they could have sent.
	psql(t, url, `BEGIN`, `INSERT INTO customers VALUES (6, 'Kurt')`, `ROLLBACK`)
	psql(t, url, `INSERT INTO unwatched VALUES (1)`)
	emit(t, sql, `{"i":"sql","k":["marker/1"]}`)
	both(t, "marker/1")

	// Commit order, not the order the transactions began in.
	first, err := sql.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Exec(context.Background(), `INSERT INTO customers VALUES (7, 'began first')`); err != nil {
		t.Fatal(err)
	}
	psql(t, url, `INSERT INTO customers VALUES (8, 'began second')`)
	if _, err := first.Exec(context.Background(), `SET LOCAL synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	both(t, "customers/8")
	both(t, "customers/7")

	// A bulk write past the limit: its rows become the table.
	psql(t, url, `INSERT INTO customers SELECT g, 'bulk' FROM generate_series(100, 199) AS g`)
	both(t, "customers")
	psql(t, url, `TRUNCATE customers, "Odd Schema"."Line ""Items"""`)
	both(t, "customers", "line_items")

	a.sink.expectNothing(t)
	b.sink.expectNothing(t)
	h := a.Health()
	if h.Source != pgfeed.WAL || !h.Connected || h.Confirmed == 0 || h.Reconnects != 0 || h.Fallbacks != 0 ||
		h.Received < 13 || !strings.HasPrefix(h.Slot, "mcplive_") || h.Publication != pgfeed.DefaultPublication {
		t.Errorf("health %+v", h)
	}
}

// Publish sends only what the log does not carry: keys of the feed's
// tables come with the writes, the others as a message in the log, which
// reaches the other feeds and not the publisher's own. PublishAll reaches
// every feed.
func TestWALPublish(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	opts := walFeed(pgfeed.TableSpec{Table: "customers", IDColumn: "id"})
	install(t, sql, opts...)
	a, b := startFeed(t, url, opts...), startFeed(t, url, opts...)

	publish(t, a.Feed, "customers/1", "customers")
	publish(t, a.Feed, "weather/paris", "customers/2")
	b.sink.expect(t, "weather/paris")
	emit(t, sql, `{"i":"sql","k":["marker"]}`)
	for _, f := range []*running{a, b} {
		f.sink.expect(t, "marker")
		f.sink.expectNothing(t)
	}
	if h := a.Health(); h.Published != 1 {
		t.Errorf("a published %d messages, want 1", h.Published)
	}

	if err := b.PublishAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.sink.expectAll(t)
	b.sink.expectAll(t)

	// What any program may write, and what it may not.
	emit(t, sql, `{"i":"a batch job","k":["orders","orders/3"]}`)
	a.sink.expect(t, "orders", "orders/3")
	emit(t, sql, `not json`)
	a.sink.expectAll(t)
	exec(t, sql, `SELECT pg_logical_emit_message(true, 'some other prefix', 'x')`)
	emit(t, sql, `{"i":"sql","k":["marker/2"]}`)
	a.sink.expect(t, "marker/2")
}

// The replication connection killed (pg_terminate_backend) while writes go
// on: the feed streams again from the last transaction it delivered, and
// hears every transaction committed meanwhile, in order, each once, with
// no ChangedAll. So does a Run started again after an earlier one
// returned.
func TestWALResumesWhereItStopped(t *testing.T) {
	dbURL := pgtest.StartShared(t)
	sql := connect(t, dbURL)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	opts := walFeed(pgfeed.TableSpec{Table: "customers", IDColumn: "id"})
	install(t, sql, opts...)
	feedURL, allowFeed := feedRole(t, sql, dbURL)
	a := startFeed(t, feedURL, opts...)

	psql(t, dbURL, `INSERT INTO customers VALUES (1, 'before')`)
	a.sink.expect(t, "customers/1")
	pid := a.Health().BackendPID

	// The feed's role may not log in while the writes are made: its
	// connection cannot come back before they are all committed.
	allowFeed(false)
	terminate(t, sql, pid)
	for id := 2; id <= 4; id++ {
		psql(t, dbURL, fmt.Sprintf(`INSERT INTO customers VALUES (%d, 'during')`, id))
	}
	psql(t, dbURL, `UPDATE customers SET name = 'during' WHERE id IN (1, 2)`)
	if h := a.Health(); h.Connected {
		t.Fatalf("the feed streams while its role may not log in: %+v", h)
	}
	allowFeed(true)
	a.sink.expect(t, "customers/2")
	a.sink.expect(t, "customers/3")
	a.sink.expect(t, "customers/4")
	a.sink.expect(t, "customers/1", "customers/2")
	psql(t, dbURL, `INSERT INTO customers VALUES (5, 'after')`)
	a.sink.expect(t, "customers/5")
	a.sink.expectNothing(t)
	if h := a.Health(); h.Reconnects != 1 || h.Fallbacks != 0 || h.BackendPID == pid || !h.Connected || h.LastError == "" {
		t.Errorf("health %+v, want 1 reconnection, no fallback, a new process, the error kept", h)
	}

	// Run started again resumes too.
	a.stop()
	psql(t, dbURL, `INSERT INTO customers VALUES (6, 'while stopped')`)
	again := pgfeed.New(feedURL, append(opts, pgfeed.WithLogger(quietLogger()), pgfeed.WithInstanceID("again"))...)
	s := newSink()
	again.Attach(s)
	end, _ := runFeed(t, again)
	<-again.Ready()
	end()
	psql(t, dbURL, `INSERT INTO customers VALUES (7, 'while stopped')`)
	end, _ = runFeed(t, again)
	s.expect(t, "customers/7")
	end()
	again.Close()
	s.expectNothing(t)
}

// feedRole creates a role for feeds, with the REPLICATION attribute, and
// returns a URL of the database as that role and a switch of its right to
// log in.
func feedRole(t testing.TB, sql *pgx.Conn, dbURL string) (string, func(allow bool)) {
	t.Helper()
	role := fmt.Sprintf("feeder_%d", time.Now().UnixNano())
	exec(t, sql, fmt.Sprintf(`CREATE ROLE %s LOGIN REPLICATION`, role))
	t.Cleanup(func() {
		// Its feeds are gone by now (cleanups run last first).
		exec(t, sql, fmt.Sprintf(`ALTER ROLE %s LOGIN`, role))
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String(), func(allow bool) {
		login := map[bool]string{true: "LOGIN", false: "NOLOGIN"}[allow]
		exec(t, sql, fmt.Sprintf(`ALTER ROLE %s %s`, role, login))
	}
}

// A slot gone while the feed was away (dropped, here) leaves it no way to
// know what it missed: it streams from a new slot and calls ChangedAll,
// once, counted.
func TestWALGoneSlotFallsBackToChangedAll(t *testing.T) {
	dbURL := pgtest.StartShared(t)
	sql := connect(t, dbURL)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	opts := walFeed(pgfeed.TableSpec{Table: "customers", IDColumn: "id"})
	install(t, sql, opts...)
	feedURL, allowFeed := feedRole(t, sql, dbURL)
	a := startFeed(t, feedURL, opts...)

	h := a.Health()
	allowFeed(false)
	terminate(t, sql, h.BackendPID)
	exec(t, sql, `SELECT pg_drop_replication_slot($1)`, h.Slot)
	psql(t, dbURL, `INSERT INTO customers VALUES (1, 'unheard')`)
	allowFeed(true)
	a.sink.expectAll(t)
	psql(t, dbURL, `INSERT INTO customers VALUES (2, 'heard')`)
	a.sink.expect(t, "customers/2")
	a.sink.expectNothing(t)
	if h := a.Health(); h.Fallbacks != 1 || h.Reconnects != 1 || !h.Connected {
		t.Errorf("health %+v, want 1 fallback and 1 reconnection", h)
	}
	if !slots(t, sql)[h.Slot] {
		t.Errorf("slot %s is not in use again: %v", h.Slot, slots(t, sql))
	}
}

// A slot the server invalidated because it held more log than
// max_slot_wal_keep_size lets through is gone as surely as a dropped one.
// This test has a server of its own: it changes the server's settings.
func TestWALInvalidatedSlotFallsBackToChangedAll(t *testing.T) {
	dbURL := pgtest.Start(t)
	sql := connect(t, dbURL)
	exec(t, sql, `ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'`)
	exec(t, sql, `SELECT pg_reload_conf()`)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	opts := walFeed(pgfeed.TableSpec{Table: "customers", IDColumn: "id"})
	install(t, sql, opts...)
	feedURL, allowFeed := feedRole(t, sql, dbURL)
	a := startFeed(t, feedURL, opts...)
	psql(t, dbURL, `INSERT INTO customers VALUES (1, 'heard')`)
	a.sink.expect(t, "customers/1")

	h := a.Health()
	allowFeed(false)
	terminate(t, sql, h.BackendPID)
	// More log than the slot may hold, in segments the checkpoint can
	// then remove.
	for range 4 {
		exec(t, sql, `INSERT INTO customers SELECT g, repeat('x', 1000) FROM generate_series(1000, 3000) AS g ON CONFLICT (id) DO UPDATE SET name = excluded.name || '!'`)
		exec(t, sql, `SELECT pg_switch_wal()`)
	}
	exec(t, sql, `CHECKPOINT`)
	var status string
	if err := sql.QueryRow(context.Background(), `SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1`, h.Slot).Scan(&status); err != nil || status != "lost" {
		t.Fatalf("slot %s: wal_status %q, %v; want lost", h.Slot, status, err)
	}
	allowFeed(true)
	a.sink.expectAll(t)
	psql(t, dbURL, `INSERT INTO customers VALUES (2, 'heard')`)
	a.sink.expect(t, "customers/2")
	if h := a.Health(); h.Fallbacks != 1 || !h.Connected {
		t.Errorf("health %+v, want 1 fallback", h)
	}
}

// The lifetime of slots: Close drops the feed's own; a slot left by a feed
// that stopped without Close (a killed instance) is dropped by the other
// feeds once unused for the expiry, never one in use; an instance started
// again with the same id starts from a slot of its own making, not the
// old one's position.
func TestWALSlotLifetime(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	opts := walFeed(pgfeed.TableSpec{Table: "customers", IDColumn: "id"})
	install(t, sql, opts...)

	// "killed": runs, stops, is never closed.
	killed := pgfeed.New(url, append(opts, pgfeed.WithLogger(quietLogger()), pgfeed.WithInstanceID("killed"))...)
	killed.Attach(newSink())
	end, _ := runFeed(t, killed)
	<-killed.Ready()
	end()
	// The server process of a closed replication connection takes a
	// moment to end and let go of the slot.
	eventually(t, "the killed instance's slot unused", func() bool { s := slots(t, sql); return len(s) == 1 && !s["mcplive_killed"] })

	// The same instance id again (a restart with a fixed id): the old
	// slot's position means nothing to a new process, whose queries all
	// start now; it starts from a new slot, re-running nothing.
	psql(t, url, `INSERT INTO customers VALUES (1, 'while killed')`)
	restarted := startFeed(t, url, append(opts, pgfeed.WithInstanceID("killed"))...)
	psql(t, url, `INSERT INTO customers VALUES (2, 'after the restart')`)
	restarted.sink.expect(t, "customers/2")
	restarted.sink.expectNothing(t)
	restarted.stop()
	if s := slots(t, sql); len(s) != 0 {
		t.Fatalf("slots %v after Close, want none", s)
	}

	// A sweeper with a short expiry drops the unused slot, and only it.
	// (Ready is closed already: the first Run streamed.)
	end, _ = runFeed(t, killed)
	eventually(t, "the killed instance streaming again", func() bool { return killed.Health().Connected })
	end()
	live := startFeed(t, url, opts...)
	sweeper := startFeed(t, url, append(opts, pgfeed.WithSlotExpiry(time.Second))...)
	eventually(t, "the sweeper dropping the unused slot", func() bool { return sweeper.Health().SlotsDropped == 1 })
	if s := slots(t, sql); len(s) != 2 || !s[live.Health().Slot] || !s[sweeper.Health().Slot] {
		t.Errorf("slots %v, want those of the two running feeds, in use", s)
	}
	// The killed instance's feed, run again, finds its slot gone.
	ks := newSink()
	killed.Attach(ks)
	end, _ = runFeed(t, killed)
	ks.expectAll(t)
	end()
	killed.Close()
}

// What keeps a database from serving the WAL source makes Run return an
// error saying so, rather than retry for ever; options it cannot use are
// refused before anything connects.
func TestWALRefusesWhatCannotServe(t *testing.T) {
	dbURL := pgtest.StartShared(t)
	sql := connect(t, dbURL)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	opts := walFeed(pgfeed.TableSpec{Table: "customers", IDColumn: "id"})
	run := func(url string, opts ...pgfeed.Option) error {
		f := pgfeed.New(url, append(opts, pgfeed.WithLogger(quietLogger()))...)
		defer f.Close()
		f.Attach(newSink())
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		return f.Run(ctx)
	}
	if err := run(dbURL, opts...); err == nil || !strings.Contains(err.Error(), "Install") {
		t.Errorf("no publication: %v", err)
	}
	install(t, sql, opts...)
	role := fmt.Sprintf("app_%d", time.Now().UnixNano())
	exec(t, sql, fmt.Sprintf(`CREATE ROLE %s LOGIN NOREPLICATION`, role))
	noReplication := strings.Replace(dbURL, "postgres@", role+"@", 1)
	if err := run(noReplication, opts...); err == nil || !strings.Contains(err.Error(), "REPLICATION") {
		t.Errorf("a role without REPLICATION: %v", err)
	}

	for name, tc := range map[string]struct {
		opts []pgfeed.Option
		want string
	}{
		"no tables":         {[]pgfeed.Option{pgfeed.WithSource(pgfeed.WAL)}, "WithTables"},
		"bad publication":   {append(opts, pgfeed.WithPublication("Mixed Case")), "publication"},
		"short expiry":      {append(opts, pgfeed.WithSlotExpiry(time.Millisecond)), "expiry"},
		"long status":       {append(opts, pgfeed.WithStatusInterval(time.Minute)), "status interval"},
		"no key limit":      {append(opts, pgfeed.WithTransactionKeyLimit(0)), "key limit"},
		"unknown source":    {[]pgfeed.Option{pgfeed.WithSource("kafka")}, "kafka"},
		"table without one": {[]pgfeed.Option{pgfeed.WithTables(pgfeed.TableSpec{IDColumn: "id"})}, "without a Table"},
	} {
		err := run(dbURL, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Run returned %v, want an error mentioning %q", name, err, tc.want)
		}
		f := pgfeed.New(dbURL, tc.opts...)
		if err := f.Install(context.Background(), sql); err == nil {
			t.Errorf("%s: Install accepted it", name)
		}
		if err := f.Publish(context.Background(), []string{"x"}); err == nil {
			t.Errorf("%s: Publish accepted it", name)
		}
		f.Close()
	}
}

// Install creates the publication, changes it to hold exactly the tables
// it is given, does nothing the second time, and refuses, naming it, a
// table whose updates publishing would break.
func TestInstallPublication(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	exec(t, sql, `CREATE TABLE orders (id int PRIMARY KEY)`)
	exec(t, sql, `CREATE TABLE "Log $pgfeed$" (at timestamptz)`)
	exec(t, sql, `ALTER TABLE "Log $pgfeed$" REPLICA IDENTITY FULL`)
	exec(t, sql, `CREATE TABLE keyless (at timestamptz)`)
	published := func() string {
		var tables string
		if err := sql.QueryRow(context.Background(), `SELECT coalesce(string_agg(tablename, ',' ORDER BY tablename), '')
			FROM pg_publication_tables WHERE pubname = 'mcplive_changes'`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		return tables
	}
	customers := pgfeed.TableSpec{Table: "customers", IDColumn: "id"}
	for range 2 {
		install(t, sql, walFeed(customers, customers)...)
		if got := published(); got != "customers" {
			t.Fatalf("published %q, want customers", got)
		}
	}
	install(t, sql, walFeed(customers, pgfeed.TableSpec{Table: "orders", IDColumn: "id"}, pgfeed.TableSpec{Table: "Log $pgfeed$"})...)
	if got := published(); got != "Log $pgfeed$,customers,orders" {
		t.Fatalf("published %q", got)
	}

	for name, tc := range map[string]struct {
		table pgfeed.TableSpec
		want  string
	}{
		"keyless":        {pgfeed.TableSpec{Table: "keyless"}, "keyless has neither a primary key nor a replica identity"},
		"missing column": {pgfeed.TableSpec{Table: "orders", IDColumn: "uuid"}, "uuid"},
		"missing table":  {pgfeed.TableSpec{Table: "nope"}, "nope"},
	} {
		err := pgfeed.New(url, walFeed(customers, tc.table)...).Install(context.Background(), sql)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", name, err, tc.want)
		}
	}
	if got := published(); got != "Log $pgfeed$,customers,orders" {
		t.Errorf("a refused install changed the publication: %q", got)
	}
	// UPDATE still works on every published table.
	exec(t, sql, `INSERT INTO "Log $pgfeed$" VALUES (now())`)
	exec(t, sql, `UPDATE "Log $pgfeed$" SET at = now()`)

	errs := make(chan error, 6)
	for range cap(errs) {
		go func() {
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			errs <- pgfeed.New(url, walFeed(customers)...).Install(context.Background(), conn)
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("installing concurrently: %v", err)
		}
	}
	if got := published(); got != "customers" {
		t.Errorf("published %q, want customers", got)
	}
}

// An idle feed still moves its position: the server's keepalives say how
// far the log goes, and what lies before that and after the last
// transaction delivered is none of the feed's business, so the server may
// recycle it. The lag then reads 0.
func TestWALConfirmsWhileIdle(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	exec(t, sql, `CREATE TABLE unwatched (id int PRIMARY KEY)`)
	opts := walFeed(pgfeed.TableSpec{Table: "customers", IDColumn: "id"})
	install(t, sql, opts...)
	a := startFeed(t, url, append(opts, pgfeed.WithStatusInterval(20*time.Millisecond))...)
	flushed(t, sql, `INSERT INTO unwatched SELECT generate_series(1, 1000)`)
	end := lsn(t, sql, `SELECT pg_current_wal_flush_lsn()`)
	eventually(t, "the feed's position past the unwatched writes", func() bool { return a.Health().Confirmed >= end })
	eventually(t, "the server's slot past them", func() bool {
		return lsn(t, sql, `SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = $1`, a.Health().Slot) >= end
	})
	if h := a.Health(); h.LagBytes != 0 || h.LagSeconds != 0 {
		t.Errorf("health %+v, want no lag", h)
	}
	a.sink.expectNothing(t)
}

// lsn runs a query of one LSN.
func lsn(t testing.TB, conn *pgx.Conn, query string, args ...any) pgfeed.LSN {
	t.Helper()
	var text string
	if err := conn.QueryRow(context.Background(), "SELECT ("+query+")::text", args...).Scan(&text); err != nil {
		t.Fatal(err)
	}
	var l pgfeed.LSN
	if err := l.UnmarshalText([]byte(text)); err != nil {
		t.Fatal(err)
	}
	return l
}

// LSN prints and reads as PostgreSQL does.
func TestLSNText(t *testing.T) {
	var l pgfeed.LSN
	if err := l.UnmarshalText([]byte("16/B374D848")); err != nil || uint64(l) != 0x16B374D848 || l.String() != "16/B374D848" {
		t.Errorf("16/B374D848 read as %d (%s), %v", l, l, err)
	}
	if err := l.UnmarshalText([]byte("nope")); err == nil {
		t.Error("nope read as an LSN")
	}
}
