package bench

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the run when a benchmark leaves goroutines behind: every
// client, listen stream and session it made must be gone, and the adapter's
// re-run and delivery goroutines with them.
func TestMain(m *testing.M) {
	if spec := os.Getenv(wireClientEnv); spec != "" {
		os.Exit(runWireClients(spec)) // the clients of the wire benchmarks
	}
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "bench: %d goroutines left behind (%d before):\n%s\n", n-before, before, buf)
			code = 1
		}
	}
	os.Exit(code)
}
