package pgfeed_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// BenchmarkNotifyLatency measures how long a change takes to reach another
// instance's sink on loopback, one change at a time, and reports the median
// and 99th percentile. Run it over 1,000 changes with
//
//	go test -run '^$' -bench NotifyLatency -benchtime 1000x ./pgfeed/
//
// publish: from Publish on instance A to Changed on instance B.
// trigger: from an INSERT by a plain SQL client (its commit) to Changed on
// instance B, through the installed trigger.
// wal: from an INSERT by a plain SQL client (its commit) to Changed on
// instance B's WAL feed, which reads it in the log.
//
// The writer's commits wait for their flush (synchronous_commit on, as
// PostgreSQL ships; the test server's default is off): a WAL feed reads
// only what is flushed.
func BenchmarkNotifyLatency(b *testing.B) {
	url := pgtest.StartShared(b)
	sql := connect(b, url)
	exec(b, sql, `SET synchronous_commit = on`)
	exec(b, sql, `CREATE TABLE bench (id bigint)`)
	exec(b, sql, `CREATE TABLE bench_wal (id bigint PRIMARY KEY)`)
	if err := pgfeed.InstallTriggers(context.Background(), sql, "", pgfeed.TableSpec{Table: "bench", IDColumn: "id"}); err != nil {
		b.Fatal(err)
	}
	walOpts := walFeed(pgfeed.TableSpec{Table: "bench_wal", IDColumn: "id"})
	install(b, sql, walOpts...)
	// The sender needs no Run: Publish works on its own, and a sink nobody
	// reads would fill up with the trigger's notifications.
	a := pgfeed.New(url, pgfeed.WithLogger(quietLogger()))
	b.Cleanup(a.Close)
	recv := startFeed(b, url)
	recvWAL := startFeed(b, url, walOpts...)
	var seq int64 // keys stay unique across -count repetitions

	measure := func(b *testing.B, recv *running, send func(id int64), want func(id int64) string) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			seq++
			key := want(seq)
			start := time.Now()
			send(seq)
			for {
				keys := recv.sink.next(b)
				if slices.Contains(keys, key) {
					break
				}
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		ms := func(q float64) float64 {
			return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond)
		}
		b.ReportMetric(ms(0.50), "p50-ms")
		b.ReportMetric(ms(0.99), "p99-ms")
	}

	b.Run("publish", func(b *testing.B) {
		measure(b, recv,
			func(id int64) { publish(b, a, "bench/"+strconv.FormatInt(id, 10)) },
			func(id int64) string { return "bench/" + strconv.FormatInt(id, 10) })
	})
	b.Run("trigger", func(b *testing.B) {
		measure(b, recv,
			func(id int64) { exec(b, sql, `INSERT INTO bench VALUES ($1)`, id) },
			func(id int64) string { return "bench/" + strconv.FormatInt(id, 10) })
	})
	b.Run("wal", func(b *testing.B) {
		measure(b, recvWAL,
			func(id int64) { exec(b, sql, `INSERT INTO bench_wal VALUES ($1)`, id) },
			func(id int64) string { return "bench_wal/" + strconv.FormatInt(id, 10) })
	})
}
