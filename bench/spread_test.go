package bench

import (
	"context"
	"slices"
	"testing"
	"time"
)

// The fan-out's ops are not alike: an op in which the garbage collector
// marks takes two to three times the others, in Fanout and FanoutFloor
// both (docs/performance.md, "The fan-out"), and one op in ten or twelve
// has one. A mean over a few hundred ops then moves with where the
// collections fell. BenchmarkFanoutSpread and BenchmarkFanoutFloorSpread
// time every op on its own and report the 10th, 50th and 90th
// percentiles: the medians compare the two without the collections, the
// 90th percentiles with them.

// BenchmarkFanoutSpread is BenchmarkFanout, op by op.
func BenchmarkFanoutSpread(b *testing.B) {
	f := newFanout(b, realisticCmd)
	var ops opTimes
	for b.Loop() {
		b.StopTimer()
		f.cmd.write()
		b.StartTimer()
		start := time.Now()
		f.change(b, int64(f.subs))
		ops = append(ops, time.Since(start))
	}
	ops.report(b)
}

// BenchmarkFanoutFloorSpread is BenchmarkFanoutFloor, op by op.
func BenchmarkFanoutFloorSpread(b *testing.B) {
	f := newFanout(b, realisticCmd)
	bursts := floorBursts(f)
	ctx := context.Background()
	var ops opTimes
	for b.Loop() {
		b.StopTimer()
		f.cmd.write()
		f.expect(int64(f.subs))
		b.StartTimer()
		start := time.Now()
		if err := floorInOneLoop(ctx, f, bursts); err != nil {
			b.Fatal(err)
		}
		f.wait(b, int64(f.subs))
		ops = append(ops, time.Since(start))
	}
	ops.report(b)
}

// opTimes are the wall times of a benchmark's ops, one each.
type opTimes []time.Duration

// report reports the 10th, 50th and 90th percentiles, in ms.
func (t opTimes) report(b *testing.B) {
	if len(t) == 0 {
		return
	}
	slices.Sort(t)
	for _, p := range []struct {
		pct  int
		unit string
	}{{10, "p10-ms"}, {50, "p50-ms"}, {90, "p90-ms"}} {
		b.ReportMetric(float64(t[(len(t)-1)*p.pct/100])/float64(time.Millisecond), p.unit)
	}
}

// BenchmarkChangedCall is how long Changed keeps a writer when its change
// reaches the Fanout setup's 1,000 queries: it files each for re-running,
// under the registry's mutex, and returns; the re-runs and notifications
// come after, untimed. The figure is the median call (changed-us) and the
// op's own time says nothing: the timer runs for the calls only, and for
// b.Loop's bookkeeping.
func BenchmarkChangedCall(b *testing.B) {
	f := newFanout(b, realisticCmd)
	var calls opTimes
	for b.Loop() {
		b.StopTimer()
		f.cmd.write()
		f.expect(int64(f.subs))
		b.StartTimer()
		start := time.Now()
		f.a.Changed(f.cmd.change)
		calls = append(calls, time.Since(start))
		b.StopTimer()
		f.wait(b, int64(f.subs))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := f.a.WaitIdle(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	if len(calls) > 0 {
		slices.Sort(calls)
		b.ReportMetric(float64(calls[len(calls)/2])/float64(time.Microsecond), "changed-us")
	}
}
