package pgfeed_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcplive/adapter/internal/pgtest"
	"github.com/mcplive/adapter/pgfeed"
)

// BenchmarkCommits measures what each source of the feed costs the
// database's writers, and how soon a commit reaches another instance while
// they write, on one server, in one sitting: pgbench commits one-row
// UPDATEs of pgbench_accounts from several clients, durably (fsync,
// synchronous_commit and full_page_writes on, as PostgreSQL ships), while
// three feeds (three instances) hear every change:
//
//	none    no feed: the database's own figure
//	notify  the triggers of InstallTriggers on the table, three NOTIFY feeds
//	wal     the publication of Install, three WAL feeds, each with its slot
//
// It reports commits/s (pgbench's tps, connections excluded) and, for the
// sources, the commit-to-delivery latency of a probe: every 20 ms another
// client commits an UPDATE of a table of its own, and the time from its
// commit's return to the Changed of that row on one of the feeds is
// recorded; p50-ms and p99-ms are their percentiles. b.N is the number of
// transactions of each pgbench client; the figures of docs/many-instances.md
// come from
//
//	go test -run '^$' -bench Commits -benchtime 3000x -count 5 ./pgfeed/
//
// (-count alternates the three, so that each run of each meets the same
// machine). It needs pgbench (Debian's postgresql package has it) and
// starts a server of its own, whose settings it changes.
func BenchmarkCommits(b *testing.B) {
	pgbench := binary(b, "pgbench")
	url := pgtest.Start(b)
	admin := connect(b, url)
	for _, sql := range []string{
		`ALTER SYSTEM SET fsync = on`,
		`ALTER SYSTEM SET synchronous_commit = on`,
		`ALTER SYSTEM SET full_page_writes = on`,
		`SELECT pg_reload_conf()`,
	} {
		exec(b, admin, sql)
	}
	run(b, pgbench, "-i", "-q", "-s", "1", url)
	exec(b, admin, `CREATE TABLE probe (id int PRIMARY KEY, n bigint NOT NULL)`)
	exec(b, admin, `INSERT INTO probe VALUES (1, 0)`)
	script := filepath.Join(b.TempDir(), "update.sql")
	if err := os.WriteFile(script, []byte("\\set aid random(1, 100000 * :scale)\n"+
		"UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	tables := []pgfeed.TableSpec{{Table: "pgbench_accounts", IDColumn: "aid"}, {Table: "probe", IDColumn: "id"}}
	const clients = 8

	for _, source := range []string{"none", "notify", "wal"} {
		b.Run(source, func(b *testing.B) {
			var probe *probeSink
			if source != "none" {
				probe = startCommitFeeds(b, url, admin, pgfeed.Source(source), tables)
			}
			exec(b, admin, `CHECKPOINT`) // each run starts with no dirty buffers to write
			ctx, cancel := context.WithCancel(context.Background())
			probed := make(chan []time.Duration, 1)
			if probe != nil {
				go func() { probed <- probe.run(ctx, url) }()
			}
			b.ResetTimer()
			out := run(b, pgbench, "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", "2",
				"-t", strconv.Itoa(b.N), "-f", script, url)
			b.StopTimer()
			cancel()
			tps := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindStringSubmatch(out)
			if tps == nil {
				b.Fatalf("no tps in pgbench's output:\n%s", out)
			}
			commits, _ := strconv.ParseFloat(tps[1], 64)
			b.ReportMetric(commits, "commits/s")
			b.ReportMetric(0, "ns/op")
			if probe != nil {
				lat := <-probed
				if len(lat) == 0 {
					return // a run shorter than a probe (-benchtime 1x)
				}
				slices.Sort(lat)
				ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond) }
				b.ReportMetric(ms(0.50), "p50-ms")
				b.ReportMetric(ms(0.99), "p99-ms")
			}
		})
	}
}

// startCommitFeeds prepares the database for source and starts three
// feeds on it, as three instances would; the first one's sink is returned.
// The test's cleanup stops the feeds and undoes the preparation, so that
// the next run measures its own source alone.
func startCommitFeeds(b *testing.B, url string, admin *pgx.Conn, source pgfeed.Source, tables []pgfeed.TableSpec) *probeSink {
	opts := []pgfeed.Option{pgfeed.WithSource(source), pgfeed.WithTables(tables...), pgfeed.WithLogger(quietLogger())}
	if err := pgfeed.New(url, opts...).Install(context.Background(), admin); err != nil {
		b.Fatal(err)
	}
	var first *probeSink
	var stops []func()
	for range 3 {
		f := pgfeed.New(url, opts...)
		s := &probeSink{heard: make(chan struct{}, 1)}
		if first == nil {
			first = s
		}
		f.Attach(s)
		end, done := runFeed(b, f)
		stops = append(stops, func() { end(); f.Close() })
		select {
		case <-f.Ready():
		case err := <-done:
			b.Fatalf("Run returned early: %v", err)
		case <-time.After(wait):
			b.Fatalf("feed not ready within %v", wait)
		}
	}
	b.Cleanup(func() {
		for _, stop := range stops {
			stop()
		}
		if source == pgfeed.WAL {
			exec(b, admin, `DROP PUBLICATION `+pgfeed.DefaultPublication)
			return
		}
		for _, t := range tables {
			exec(b, admin, fmt.Sprintf(`DROP TRIGGER mcplive_notify ON %[1]s; DROP TRIGGER mcplive_notify_truncate ON %[1]s`, t.Table))
		}
	})
	return first
}

// probeSink drops what it hears, but the probe row's key, which it
// announces.
type probeSink struct{ heard chan struct{} }

func (s *probeSink) Changed(keys ...string) {
	if slices.Contains(keys, "probe/1") {
		select {
		case s.heard <- struct{}{}:
		default:
		}
	}
}

func (s *probeSink) ChangedAll() {}

// run commits an UPDATE of the probe row every 20 ms until ctx ends, and
// returns how long after each commit returned the sink heard of it.
func (s *probeSink) run(ctx context.Context, url string) []time.Duration {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil
	}
	defer conn.Close(context.Background())
	var lat []time.Duration
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return lat
		case <-tick.C:
		}
		select { // one left over from a probe that timed out
		case <-s.heard:
		default:
		}
		if _, err := conn.Exec(ctx, `UPDATE probe SET n = n + 1 WHERE id = 1`); err != nil {
			return lat
		}
		committed := time.Now()
		select {
		case <-s.heard:
			lat = append(lat, time.Since(committed))
		case <-ctx.Done():
			return lat
		}
	}
}

// binary finds a PostgreSQL program on PATH or where Debian puts it, and
// skips (or, with MCPLIVE_REQUIRE_POSTGRES=1, fails) without it.
func binary(t testing.TB, name string) string {
	t.Helper()
	if p, err := osexec.LookPath(name); err == nil {
		return p
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(found) > 0 {
		slices.Sort(found)
		return found[len(found)-1]
	}
	if os.Getenv(pgtest.RequireEnv) == "1" {
		t.Fatalf("%s not found", name)
	}
	t.Skipf("%s not found (apt-get install postgresql)", name)
	return ""
}

// run runs a program to completion and returns its output.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := osexec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}
