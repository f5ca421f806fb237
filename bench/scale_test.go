package bench

import (
	"fmt"
	"testing"
	"time"
)

// How the cost of live queries grows: with distinct queries and
// subscribers (BenchmarkFanoutScale), and with writes per second
// (BenchmarkWriteRate). docs/performance.md tabulates them.

// BenchmarkFanoutScale is BenchmarkFanout at other sizes: one Changed
// re-runs every query, each result differs, and the op ends when every
// subscriber was notified. queries is the distinct argument sets, subs the
// subscriptions spread evenly over them, 64 a session.
func BenchmarkFanoutScale(b *testing.B) {
	for _, size := range []struct{ queries, subs int }{
		{100, 1000}, {1000, 1000}, {1000, 10000}, {10000, 10000},
	} {
		b.Run(fmt.Sprintf("queries=%d/subs=%d", size.queries, size.subs), func(b *testing.B) {
			benchFanoutSized(b, nil, realisticCmd, size.queries, size.subs)
		})
	}
}

// writeWindow is how long one op of BenchmarkWriteRate writes.
const writeWindow = 2 * time.Second

// BenchmarkWriteRate is the Fanout setup (1,000 queries, 10,000
// subscriptions) under a steady stream of writes for 2 seconds an op,
// each followed by its Changed: row writes change one customer's orders
// and report its row ("orders/k": one query, 10 subscribers), customers in
// turn; table writes change every customer's and report the table
// ("orders": every query). It reports the CPU the whole process spends per
// second (cpu-ms/s), and the re-runs and notifications per second, which
// coalescing keeps below writes × queries affected once writes outpace
// re-runs. The writes are paced by a ticker of 100 Hz, whose own cost
// row/writes=0 measures: on a virtual machine, waking a sleeping process
// is not free.
func BenchmarkWriteRate(b *testing.B) {
	for _, tc := range []struct {
		kind  string
		rates []int
	}{{"row", []int{0, 100, 1000, 10000}}, {"table", []int{1, 10, 100}}} {
		for _, rate := range tc.rates {
			b.Run(fmt.Sprintf("%s/writes=%d", tc.kind, rate), func(b *testing.B) {
				benchWriteRate(b, tc.kind == "table", rate)
			})
		}
	}
}

func benchWriteRate(b *testing.B, table bool, rate int) {
	f := newFanout(b, realisticCmd)
	settle()
	before := f.a.LiveStats()
	b.ResetTimer()
	cpu := processCPU(b)
	writes := 0
	for b.Loop() {
		// Every 10 ms, the writes due by then: a finer pace would cost
		// the writer more CPU than some of the rates.
		tick := time.NewTicker(10 * time.Millisecond)
		start := time.Now()
		for time.Since(start) < writeWindow {
			<-tick.C
			due := int(time.Since(start) * time.Duration(rate) / time.Second)
			for ; writes < due; writes++ {
				if table {
					f.cmd.write()
					f.a.Changed(f.cmd.change)
				} else {
					f.a.Changed(f.cmd.writeOne(writes%f.queries + 1))
				}
			}
		}
		tick.Stop()
	}
	used := processCPU(b) - cpu
	b.StopTimer()
	after := f.a.LiveStats()
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(used)/float64(time.Millisecond)/secs, "cpu-ms/s")
	b.ReportMetric(float64(writes)/secs, "writes/s")
	b.ReportMetric(float64(after.Reruns-before.Reruns)/secs, "reruns/s")
	b.ReportMetric(float64(after.Notified-before.Notified)/secs, "notifications/s")
}
