package pgfeed_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// throughputRows is how many rows each table of BenchmarkWriteThroughput
// holds; its writers update them at random.
const throughputRows = 1000

// BenchmarkWriteThroughput measures how many writes a second PostgreSQL
// commits to a table without the feed's trigger and to one with it
// (InstallTriggers with an IDColumn, as the example installs it: a
// notification of the row's and the table's key per row written), while
// three feeds listen, as three instances would. Each write is one UPDATE
// of a row chosen at random in a transaction of its own, from 4 clients
// per CPU at once; writes/s is the figure, ns/op its inverse.
//
// fast runs on the test server as it is (fsync and synchronous_commit
// off: a commit waits for no disk), which isolates what the trigger and
// NOTIFY cost in CPU and locks; durable turns both on for its duration, so
// that every commit waits for its WAL to reach the disk. PostgreSQL holds
// a lock that serializes the commits of every transaction that notified,
// across the whole server, until the commit is done: with a durable
// commit each notifying write waits for the flushes of all those before
// it, which the writes without a trigger share (group commit). Run it
// with
//
//	go test -run '^$' -bench WriteThroughput -benchtime 5s ./pgfeed/
func BenchmarkWriteThroughput(b *testing.B) {
	url := pgtest.StartShared(b)
	admin := connect(b, url)
	for _, table := range []string{"plain", "watched"} {
		exec(b, admin, `CREATE TABLE `+table+` (id bigint PRIMARY KEY, name text NOT NULL)`)
		exec(b, admin, `INSERT INTO `+table+` SELECT i, 'row ' || i FROM generate_series(1, $1) AS i`, throughputRows)
	}
	if err := pgfeed.InstallTriggers(context.Background(), admin, "", pgfeed.TableSpec{Table: "watched", IDColumn: "id"}); err != nil {
		b.Fatal(err)
	}
	for range 3 {
		listen(b, url)
	}

	for _, durable := range []bool{false, true} {
		mode := map[bool]string{false: "fast", true: "durable"}[durable]
		if durable {
			setDurable(b, admin, true)
		}
		for _, table := range []string{"plain", "watched"} {
			b.Run(mode+"/"+map[string]string{"plain": "no-trigger", "watched": "trigger"}[table], func(b *testing.B) {
				writers := 4 * runtime.GOMAXPROCS(0)
				conns := make(chan *pgx.Conn, writers)
				for range writers {
					conn := connect(b, url)
					if durable {
						exec(b, conn, `SET synchronous_commit = on`)
					}
					conns <- conn
				}
				b.SetParallelism(4)
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					conn := <-conns
					rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
					for pb.Next() {
						id := 1 + rng.IntN(throughputRows)
						if _, err := conn.Exec(context.Background(), `UPDATE `+table+` SET name = $1 WHERE id = $2`,
							fmt.Sprintf("row %d at %d", id, rng.Int64()), id); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
			})
		}
	}
	setDurable(b, admin, false)
}

// setDurable turns fsync on or off for the whole server (it takes a
// reload, no restart).
func setDurable(b *testing.B, admin *pgx.Conn, on bool) {
	b.Helper()
	if on {
		exec(b, admin, `ALTER SYSTEM SET fsync = on`)
	} else {
		exec(b, admin, `ALTER SYSTEM RESET fsync`)
	}
	exec(b, admin, `SELECT pg_reload_conf()`)
	want := map[bool]string{false: "off", true: "on"}[on]
	deadline := time.Now().Add(wait)
	for {
		var got string
		if err := admin.QueryRow(context.Background(), `SHOW fsync`).Scan(&got); err != nil {
			b.Fatal(err)
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("fsync is %s %v after the reload, want %s", got, wait, want)
		}
		time.Sleep(10 * time.Millisecond) // the reload reaches the backends by signal
	}
}

// listen starts a feed on url that reads every notification and drops
// it, as an instance with no live query would.
func listen(b *testing.B, url string) {
	b.Helper()
	f := pgfeed.New(url, pgfeed.WithLogger(quietLogger()))
	f.Attach(discardSink{})
	end, done := runFeed(b, f)
	b.Cleanup(func() {
		end()
		f.Close()
	})
	select {
	case <-f.Ready():
	case err := <-done:
		b.Fatalf("Run returned early: %v", err)
	case <-time.After(wait):
		b.Fatalf("feed not listening within %v", wait)
	}
}

// discardSink drops what it is told, and never blocks.
type discardSink struct{}

func (discardSink) Changed(...string) {}
func (discardSink) ChangedAll()       {}

// TestNotifyPayloadCap asks this server the longest NOTIFY payload it
// takes, and checks that the feed's notifications stay under it.
func TestNotifyPayloadCap(t *testing.T) {
	conn := connect(t, pgtest.StartShared(t))
	fits := func(n int) error {
		_, err := conn.Exec(context.Background(), `SELECT pg_notify('payload_probe', repeat('x', $1))`, n)
		return err
	}
	if err := fits(7999); err != nil {
		t.Fatalf("a payload of 7999 bytes: %v", err)
	}
	err := fits(8000)
	if err == nil || !strings.Contains(err.Error(), "payload string too long") {
		t.Fatalf("a payload of 8000 bytes: %v, want PostgreSQL's \"payload string too long\"", err)
	}
	if max := pgfeed.MaxPayloadForTest; max >= 8000 {
		t.Errorf("the feed sends payloads of up to %d bytes, which PostgreSQL refuses from 8000 on", max)
	}
}
