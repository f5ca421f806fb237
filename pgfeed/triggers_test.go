package pgfeed_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// The triggers send a row's key alone (it reaches the readers of the row
// and of its table), and the table's key where no row is named.
func TestTriggersReachEveryInstance(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE customers (id int PRIMARY KEY, name text)`)
	exec(t, sql, `CREATE SCHEMA "Odd Schema"`)
	exec(t, sql, `CREATE TABLE "Odd Schema"."Line ""Items""" ("Item Id" text, qty int)`)
	exec(t, sql, `CREATE TABLE audit_log (at timestamptz DEFAULT now())`)
	tables := []pgfeed.TableSpec{
		{Table: "customers", IDColumn: "id"},
		{Schema: "Odd Schema", Table: `Line "Items"`, IDColumn: "Item Id", Key: "line_items"},
		{Table: "audit_log"},
	}
	// Twice: installing again replaces, it does not add a second trigger.
	for range 2 {
		if err := pgfeed.InstallTriggers(context.Background(), sql, "", tables...); err != nil {
			t.Fatal(err)
		}
	}
	a, b := startFeed(t, url), startFeed(t, url)
	both := func(t *testing.T, keys ...string) {
		t.Helper()
		a.sink.expect(t, keys...)
		b.sink.expect(t, keys...)
	}

	exec(t, sql, `INSERT INTO customers VALUES (1, 'Ada')`)
	both(t, "customers/1")
	exec(t, sql, `UPDATE customers SET name = 'Ada Lovelace' WHERE id = 1`)
	both(t, "customers/1")
	exec(t, sql, `UPDATE customers SET id = 2 WHERE id = 1`)
	both(t, "customers/1", "customers/2")
	exec(t, sql, `DELETE FROM customers WHERE id = 2`)
	both(t, "customers/2")
	exec(t, sql, `INSERT INTO customers VALUES (3, 'Grace'), (4, 'Edsger')`)
	both(t, "customers/3")
	both(t, "customers/4")
	exec(t, sql, `TRUNCATE customers`)
	both(t, "customers")
	exec(t, sql, `DELETE FROM customers`) // no rows, no notification

	exec(t, sql, `INSERT INTO "Odd Schema"."Line ""Items""" VALUES ('a/b ''c''', 1), (NULL, 2)`)
	both(t, "line_items/a/b 'c'")
	both(t, "line_items") // a NULL id names no row
	exec(t, sql, `INSERT INTO audit_log DEFAULT VALUES`)
	both(t, "audit_log")

	// An id too long for a notification is cut down to the table key.
	exec(t, sql, `INSERT INTO "Odd Schema"."Line ""Items""" VALUES (repeat('x', 9000), 1)`)
	both(t, "line_items")

	// A write in a transaction is heard when it commits, not before.
	tx, err := sql.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `INSERT INTO customers VALUES (5, 'Barbara')`); err != nil {
		t.Fatal(err)
	}
	publish(t, b.Feed, "before-commit")
	a.sink.expect(t, "before-commit")
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	both(t, "customers/5")

	a.sink.expectNothing(t)
	b.sink.expectNothing(t)
}

func TestInstallTriggersOnOtherChannel(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE t (id bigint)`)
	if err := pgfeed.InstallTriggers(context.Background(), sql, "elsewhere", pgfeed.TableSpec{Table: "t", IDColumn: "id"}); err != nil {
		t.Fatal(err)
	}
	other, def := startFeed(t, url, pgfeed.WithChannel("elsewhere")), startFeed(t, url)
	exec(t, sql, `INSERT INTO t VALUES (9000000000)`)
	other.sink.expect(t, "t/9000000000")
	publish(t, other.Feed, "marker") // on the default channel nothing came
	def.sink.expectNothing(t)
}

// TestTriggerFunctionIgnoresTheWritersSearchPath: the trigger function
// runs with the search_path of whoever writes. A writer whose path puts a
// schema before pg_catalog (one a less trusted role can create functions
// in) made it call that schema's pg_notify, with the writer's privileges:
// the classic trigger hijack. The function pins its own search_path, so
// the built-in runs and the change is heard.
func TestTriggerFunctionIgnoresTheWritersSearchPath(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE t (id int)`)
	if err := pgfeed.InstallTriggers(context.Background(), sql, "", pgfeed.TableSpec{Table: "t", IDColumn: "id"}); err != nil {
		t.Fatal(err)
	}
	exec(t, sql, `CREATE SCHEMA hijack`)
	exec(t, sql, `CREATE TABLE hijack.calls (payload text)`)
	exec(t, sql, `CREATE FUNCTION hijack.pg_notify(text, text) RETURNS void LANGUAGE sql AS $$ INSERT INTO hijack.calls VALUES ($2) $$`)
	f := startFeed(t, url)

	exec(t, sql, `SET search_path = hijack, pg_catalog, public`)
	exec(t, sql, `INSERT INTO public.t VALUES (7)`)
	f.sink.expect(t, "t/7")
	var calls int
	if err := sql.QueryRow(context.Background(), `SELECT count(*) FROM hijack.calls`).Scan(&calls); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("the trigger called the writer's search_path's pg_notify %d times", calls)
	}
}

func TestInstallTriggersErrors(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE good (id int)`)
	exec(t, sql, `CREATE TABLE bad (id int)`)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		channel string
		tables  []pgfeed.TableSpec
		want    string
	}{
		"missing column": {"", []pgfeed.TableSpec{{Table: "good", IDColumn: "id"}, {Table: "bad", IDColumn: "uuid"}}, "uuid"},
		"missing table":  {"", []pgfeed.TableSpec{{Table: "good"}, {Table: "nope"}}, "nope"},
		"no table name":  {"", []pgfeed.TableSpec{{IDColumn: "id"}}, "without a Table"},
		"slash in key":   {"", []pgfeed.TableSpec{{Table: "good", Key: "a/b"}}, "separates"},
		"long channel":   {strings.Repeat("c", 64), []pgfeed.TableSpec{{Table: "good"}}, "channel"},
		"nul in channel": {"a\x00b", []pgfeed.TableSpec{{Table: "good"}}, "channel"},
		// pg_notify would refuse every payload: every write to the
		// table would fail.
		"long key": {"", []pgfeed.TableSpec{{Table: "good", Key: strings.Repeat("k", 7990)}}, "too long"},
	} {
		err := pgfeed.InstallTriggers(ctx, sql, tc.channel, tc.tables...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, tc.want)
		}
	}
	// All or nothing: the good table, listed first, got no trigger either.
	var n int
	if err := sql.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'good'::regclass`).Scan(&n); err != nil || n != 0 {
		t.Errorf("good has %d triggers (%v), want 0", n, err)
	}
}

// Instances starting together install at the same moment.
func TestInstallTriggersConcurrently(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	exec(t, sql, `CREATE TABLE t (id int)`)
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			errs <- pgfeed.InstallTriggers(context.Background(), conn, "", pgfeed.TableSpec{Table: "t", IDColumn: "id"})
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	var n int
	if err := sql.QueryRow(context.Background(), `SELECT count(*) FROM pg_trigger WHERE tgrelid = 't'::regclass`).Scan(&n); err != nil || n != 2 {
		t.Errorf("t has %d triggers (%v), want 2", n, err)
	}
}
