package pgfeed_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
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
// recorded; p50-ms and p99-ms are their percentiles.
//
// The clients of the database, pgbench and the feeds (a process of their
// own, TestCommitFeeds), run at the lowest priority (nice 19): on a small
// machine they share the cores with the server, where in production they
// run on machines of their own, and their work would count against the
// database's. The server's own processes, the WAL senders that decode the
// log for the WAL feeds and the backends that hold LISTEN for the NOTIFY
// ones included, run at the normal priority and are what is measured.
//
// b.N is the number of transactions of each pgbench client; the figures of
// docs/many-instances.md come from five runs of
//
//	go test -run '^$' -bench Commits -benchtime 3000x ./pgfeed/
//
// each of which runs the three in turn on a server of its own. It needs
// pgbench (Debian's postgresql package has it) and nice.
func BenchmarkCommits(b *testing.B) {
	pgbench, nice := binary(b, "pgbench"), lowPriority(b)
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
	const clients = 8

	for _, source := range []string{"none", "notify", "wal"} {
		b.Run(source, func(b *testing.B) {
			var feeds *commitFeeds
			if source != "none" {
				if err := pgfeed.New(url, commitFeedOptions(pgfeed.Source(source))...).Install(context.Background(), admin); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { uninstall(b, admin, pgfeed.Source(source)) })
				feeds = startCommitFeeds(b, nice, url, source)
			}
			// Each run starts from the same state: no dead rows left by the
			// run before, no dirty buffers to write.
			exec(b, admin, `VACUUM pgbench_accounts`)
			exec(b, admin, `CHECKPOINT`)
			b.ResetTimer()
			out := run(b, nice[0], append(nice[1:], pgbench, "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", "2",
				"-t", strconv.Itoa(b.N), "-f", script, url)...)
			b.StopTimer()
			tps := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindStringSubmatch(out)
			if tps == nil {
				b.Fatalf("no tps in pgbench's output:\n%s", out)
			}
			commits, _ := strconv.ParseFloat(tps[1], 64)
			b.ReportMetric(commits, "commits/s")
			b.ReportMetric(0, "ns/op")
			if feeds == nil {
				return
			}
			lat := feeds.stop(b)
			if len(lat) == 0 {
				return // a run shorter than a probe (-benchtime 1x)
			}
			slices.Sort(lat)
			ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}

// commitFeedsEnv passes TestCommitFeeds its source and URL.
const commitFeedsEnv = "PGFEED_COMMIT_FEEDS"

func commitFeedOptions(source pgfeed.Source) []pgfeed.Option {
	return []pgfeed.Option{
		pgfeed.WithSource(source), pgfeed.WithLogger(quietLogger()),
		pgfeed.WithTables(pgfeed.TableSpec{Table: "pgbench_accounts", IDColumn: "aid"}, pgfeed.TableSpec{Table: "probe", IDColumn: "id"}),
	}
}

// uninstall undoes Install, so that the next run measures its own source
// alone.
func uninstall(b *testing.B, admin *pgx.Conn, source pgfeed.Source) {
	if source == pgfeed.WAL {
		exec(b, admin, `DROP PUBLICATION `+pgfeed.DefaultPublication)
		return
	}
	for _, t := range []string{"pgbench_accounts", "probe"} {
		exec(b, admin, fmt.Sprintf(`DROP TRIGGER mcplive_notify ON %[1]s; DROP TRIGGER mcplive_notify_truncate ON %[1]s`, t))
	}
}

// commitFeeds is the process of TestCommitFeeds.
type commitFeeds struct {
	cmd   *osexec.Cmd
	stdin io.Closer
	out   *bufio.Scanner
}

// startCommitFeeds starts TestCommitFeeds at low priority, and returns once
// its feeds are ready.
func startCommitFeeds(b *testing.B, nice []string, url, source string) *commitFeeds {
	cmd := osexec.Command(nice[0], append(nice[1:], os.Args[0], "-test.run=^TestCommitFeeds$")...)
	cmd.Env = append(os.Environ(), commitFeedsEnv+"="+source+" "+url)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	f := &commitFeeds{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	for f.out.Scan() {
		if f.out.Text() == "ready" {
			return f
		}
	}
	b.Fatalf("the feeds' process ended before it was ready: %v", f.out.Err())
	return nil
}

// stop ends the probe and returns its latencies.
func (f *commitFeeds) stop(b *testing.B) []time.Duration {
	f.stdin.Close()
	var lat []time.Duration
	for f.out.Scan() {
		if ns, ok := strings.CutPrefix(f.out.Text(), "latency "); ok {
			n, _ := strconv.ParseInt(ns, 10, 64)
			lat = append(lat, time.Duration(n))
		}
	}
	if err := f.cmd.Wait(); err != nil {
		b.Fatalf("the feeds' process: %v", err)
	}
	return lat
}

// TestCommitFeeds is the feeds of BenchmarkCommits, in a process of their
// own: three feeds of the source and URL of $PGFEED_COMMIT_FEEDS, and the
// probe. It says "ready" once the feeds are, probes until its standard
// input closes, then prints each latency. Run alone, it does nothing.
func TestCommitFeeds(t *testing.T) {
	spec := os.Getenv(commitFeedsEnv)
	if spec == "" {
		t.Skip("the feeds of BenchmarkCommits, which runs this test in a process of its own")
	}
	source, url, _ := strings.Cut(spec, " ")
	var probe *probeSink
	for range 3 {
		f := pgfeed.New(url, commitFeedOptions(pgfeed.Source(source))...)
		s := &probeSink{heard: make(chan struct{}, 1)}
		if probe == nil {
			probe = s
		}
		f.Attach(s)
		end, done := runFeed(t, f)
		t.Cleanup(func() { end(); f.Close() })
		select {
		case <-f.Ready():
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		case <-time.After(wait):
			t.Fatalf("feed not ready within %v", wait)
		}
	}
	fmt.Println("ready")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	for _, l := range probe.run(ctx, url) {
		fmt.Println("latency", l.Nanoseconds())
	}
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
		select { // one left over from a probe that the end cut short
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

// lowPriority returns the command line that runs a program at the lowest
// priority, before the program's: nice -n 19.
func lowPriority(t testing.TB) []string {
	t.Helper()
	p, err := osexec.LookPath("nice")
	if err != nil {
		t.Skip("nice not found")
	}
	return []string{p, "-n", "19"}
}
