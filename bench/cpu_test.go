package bench

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time the process has used so far, user and
// system, from getrusage(2).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter reports the process CPU per op of a benchmark, as cpu-ms/op:
// on a machine shared with other work, the wall time of an op counts the
// waits for a core too, where its CPU time does not.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) *cpuMeter { return &cpuMeter{b: b, start: processCPU(b)} }

func (m *cpuMeter) report(ops int) {
	used := processCPU(m.b) - m.start
	m.b.ReportMetric(float64(used)/float64(time.Millisecond)/float64(ops), "cpu-ms/op")
}
