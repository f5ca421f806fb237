package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter"
)

func benchFanout(b *testing.B, cmd liveCmd, opts ...adapter.Option) {
	benchFanoutFrom(b, nil, cmd, opts...)
}

// benchFanoutFrom is benchFanout with the change reported with the
// writer's context (nil for none).
func benchFanoutFrom(b *testing.B, writer context.Context, cmd liveCmd, opts ...adapter.Option) {
	benchFanoutSized(b, writer, cmd, fanQueries, fanSubs, opts...)
}

func benchFanoutSized(b *testing.B, writer context.Context, cmd liveCmd, queries, subs int, opts ...adapter.Option) {
	f := newFanoutSized(b, cmd, queries, subs, opts...)
	f.writer = writer
	before := f.a.LiveStats()
	received := f.received.Load()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		b.StopTimer()
		f.cmd.write()
		b.StartTimer()
		f.change(b, int64(subs))
	}
	b.StopTimer()
	cpu.report(loops)
	after := f.a.LiveStats()
	reruns := after.Reruns - before.Reruns
	if reruns != uint64(loops*queries) {
		b.Fatalf("%d re-runs in %d changes, want %d each", reruns, loops, queries)
	}
	if got := f.received.Load() - received; got != int64(loops*subs) {
		b.Fatalf("%d notifications in %d changes, want %d each", got, loops, subs)
	}
	b.ReportMetric(float64(reruns)/float64(loops), "reruns/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*subs), "ns/notification")
}

// BenchmarkFanout: one Changed re-runs the 1,000 queries behind 10,000
// subscriptions, each result differs, and the op ends when all 10,000
// notifications reached the clients' handlers.
func BenchmarkFanout(b *testing.B) { benchFanout(b, realisticCmd) }

// BenchmarkFanoutTrivial is BenchmarkFanout with a command that does
// almost nothing, so that the adapter's own cost shows.
func BenchmarkFanoutTrivial(b *testing.B) { benchFanout(b, trivialCmd) }

// BenchmarkFanoutDirect: the same 1,000 command executions, called directly
// in a loop: the physical limit of a fan-out.
func BenchmarkFanoutDirect(b *testing.B) {
	st := newOrderStore(fanQueries)
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		for c := 1; c <= fanQueries; c++ {
			page, err := st.ordersOf(ctx, ordersArgs{Customer: c})
			if err != nil {
				b.Fatal(err)
			}
			sinkPage = page
		}
	}
	cpu.report(loops)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanQueries), "ns/exec")
}

// BenchmarkFanoutFloor is what a fan-out costs without a registry: the
// same 1,000 command executions, then the same 10,000 notifications handed
// to the same in-process sessions through mcp-go (into each session's
// channel, as mcp-go's own sends do, but waiting where mcp-go would drop),
// each session's in one burst, and the op ends, as Fanout's does, when all
// of them reached the clients' handlers. It knows in advance that every
// result changed and who subscribed to what, so it keeps no state, compares
// nothing and starts no goroutine: the least any registry can do.
func BenchmarkFanoutFloor(b *testing.B) { benchFanoutFloor(b, realisticCmd) }

// BenchmarkFanoutFloorTrivial is BenchmarkFanoutFloor for the trivial
// command.
func BenchmarkFanoutFloorTrivial(b *testing.B) { benchFanoutFloor(b, trivialCmd) }

func benchFanoutFloor(b *testing.B, cmd liveCmd) { runFloor(b, cmd, floorInOneLoop) }

// BenchmarkFanoutFloorParallel is BenchmarkFanoutFloor on every CPU
// (GOMAXPROCS goroutines, each with its share of the commands, then of the
// sessions), as the registry's workers run: what running in parallel
// costs by itself. It is not the target's floor; it tells apart, in
// Fanout's CPU beyond FanoutFloor's, the price of using every core (two
// cores contending for the allocator, the store's lock and the sessions'
// channels) from the registry's own work (docs/performance.md).
func BenchmarkFanoutFloorParallel(b *testing.B) { runFloor(b, realisticCmd, floorOnEveryCPU) }

// runFloor times op, a fan-out without a registry, on the Fanout setup:
// each op runs the commands and hands every burst over, and ends when the
// clients' handlers have every notification.
func runFloor(b *testing.B, cmd liveCmd, op func(context.Context, *fanout, [][]mcp.JSONRPCNotification) error) {
	f := newFanout(b, cmd)
	bursts := floorBursts(f)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		b.StopTimer()
		f.cmd.write()
		f.expect(int64(f.subs))
		b.StartTimer()
		if err := op(ctx, f, bursts); err != nil {
			b.Fatal(err)
		}
		f.wait(b, int64(f.subs))
	}
	cpu.report(loops)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*f.subs), "ns/notification")
}

// floorInOneLoop runs the commands, then hands each session its burst,
// in one loop: FanoutFloor.
func floorInOneLoop(ctx context.Context, f *fanout, bursts [][]mcp.JSONRPCNotification) error {
	for k := 1; k <= f.queries; k++ {
		if err := f.cmd.direct(ctx, k); err != nil {
			return err
		}
	}
	for i, ls := range f.listens {
		ch := ls.session.NotificationChannel()
		for _, n := range bursts[i] {
			ch <- n
		}
	}
	return nil
}

// floorOnEveryCPU is floorInOneLoop split over GOMAXPROCS goroutines.
func floorOnEveryCPU(ctx context.Context, f *fanout, bursts [][]mcp.JSONRPCNotification) error {
	procs := runtime.GOMAXPROCS(0)
	errs := make(chan error, procs)
	for w := range procs {
		go func() {
			for k := 1 + w; k <= f.queries; k += procs {
				if err := f.cmd.direct(ctx, k); err != nil {
					errs <- err
					return
				}
			}
			for i := w; i < len(f.listens); i += procs {
				ch := f.listens[i].session.NotificationChannel()
				for _, n := range bursts[i] {
					ch <- n
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range procs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// floorBursts are the notifications of each listen stream of f, built
// once, as the registry keeps them: the params of each subscription's,
// and the _meta of each stream's.
func floorBursts(f *fanout) [][]mcp.JSONRPCNotification {
	bursts := make([][]mcp.JSONRPCNotification, len(f.listens))
	for i, ls := range f.listens {
		meta := <-ls.meta
		for _, uri := range ls.uris {
			n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION}
			n.Method = string(mcp.MethodNotificationResourceUpdated)
			n.Params = mcp.NotificationParams{Meta: meta, AdditionalFields: map[string]any{"uri": uri}}
			bursts[i] = append(bursts[i], n)
		}
	}
	return bursts
}

// BenchmarkFanoutDirectTrivial is BenchmarkFanoutDirect for the trivial
// command.
func BenchmarkFanoutDirectTrivial(b *testing.B) {
	st := &counterStore{}
	ctx := context.Background()
	b.ReportAllocs()
	loops := 0
	for b.Loop() {
		loops++
		for c := 1; c <= fanQueries; c++ {
			item, err := st.show(ctx, showArgs{ID: int64(c)})
			if err != nil {
				b.Fatal(err)
			}
			sinkItem = item
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanQueries), "ns/exec")
}

// BenchmarkNoChange: a Changed that re-runs the 1,000 queries behind 10,000
// subscriptions, none of whose results changed, so no one is notified. The
// op ends when the registry is idle again.
func BenchmarkNoChange(b *testing.B) {
	f := newFanout(b, realisticCmd)
	before := f.a.LiveStats()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		f.change(b, 0)
	}
	b.StopTimer()
	cpu.report(loops)
	after := f.a.LiveStats()
	if reruns := after.Reruns - before.Reruns; reruns != uint64(loops*fanQueries) {
		b.Fatalf("%d re-runs in %d changes, want %d each", reruns, loops, fanQueries)
	}
	// Notifications already on their way would still arrive: give them a
	// moment, then count.
	time.Sleep(10 * time.Millisecond)
	notes := after.Notified - before.Notified
	if got := f.received.Load(); notes != 0 || got != 0 {
		b.Fatalf("%d notifications sent, %d received, want 0", notes, got)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanSubs), "ns/sub")
	b.ReportMetric(float64(notes)/float64(loops), "notifications/op")
}

// idleWindow is how long one op of BenchmarkIdle watches the process.
const idleWindow = 2 * time.Second

// BenchmarkIdle: the Fanout setup, 10,000 subscriptions over 1,000 queries
// on 157 in-process clients, with nothing written. It reports the CPU time
// the whole process spends per second of wall time (cpu-ms/s, from
// getrusage) while it holds them: what subscriptions cost while nothing
// changes. Each op is a window of 2 seconds.
func BenchmarkIdle(b *testing.B) {
	benchIdle(b, newFanout(b, realisticCmd))
}

// BenchmarkIdlePaced is BenchmarkIdle with the command paced
// (WithNotifyInterval, 1 s), after two changes: the first notified at once,
// the second delayed for every query and sent at the end of the interval.
// Once those are out nothing is delayed, and pacing costs nothing.
func BenchmarkIdlePaced(b *testing.B) {
	f := newFanout(b, pacedCmd)
	for range 2 {
		f.cmd.write()
		f.change(b, fanSubs) // WaitIdle waits for the delayed ones too
	}
	if st := f.a.LiveStats(); st.Delayed != 0 {
		b.Fatalf("after the changes: %+v", st)
	}
	benchIdle(b, f)
}

func benchIdle(b *testing.B, f *fanout) {
	settle()
	before := f.a.LiveStats()
	b.ResetTimer()
	cpu := processCPU(b)
	for b.Loop() {
		time.Sleep(idleWindow)
	}
	used := processCPU(b) - cpu
	b.StopTimer()
	if after := f.a.LiveStats(); after.Reruns != before.Reruns || after.Subscriptions != fanSubs {
		b.Fatalf("while idle: %+v, before %+v", after, before)
	}
	b.ReportMetric(float64(used)/float64(time.Millisecond)/b.Elapsed().Seconds(), "cpu-ms/s")
}
