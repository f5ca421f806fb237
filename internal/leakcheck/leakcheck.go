// Package leakcheck fails a test when a goroutine it started outlives it.
//
// It does, with the standard library only, what go.uber.org/goleak did for
// the tests of this module: Go's module graph keeps the requirements of a
// dependency's tests, so a test library required here would be in the graph
// of every program that imports the adapter.
//
//	defer leakcheck.VerifyNone(t, leakcheck.Current()) // goleak.VerifyNone(t, goleak.IgnoreCurrent())
//	leakcheck.Check(t)                                  // the same, run as a t.Cleanup
//	leakcheck.VerifyTestMain(m)                         // goleak.VerifyTestMain(m)
//
// A deferred VerifyNone runs when the test function returns, before its
// t.Cleanup functions; Check runs after every Cleanup registered after it,
// so it also sees what those stop.
//
// Goroutines are told apart by id (ids are never reused) in the dump of
// runtime.Stack. A goroutine still alive is looked for again, with a
// backoff, for up to [Wait]: one on its way out is not a leak.
//
// # What is not a leak
//
// Besides the goroutines of the snapshot and the one checking, these are
// ignored, because the test did not start them or they live as long as the
// process whatever the test does:
//
//   - The test runner's own: a goroutine waiting, in "chan receive", with
//     testing.RunTests, testing.(*T).Run or testing.(*T).Parallel on top
//     (a parent waiting for its subtests, a parallel test waiting for its
//     turn), or testing.runFuzzing or testing.runFuzzTests (a fuzz target
//     waiting for its inputs).
//   - os/signal's: the first signal.Notify starts a goroutine that never
//     ends (os/signal.signal_recv or os/signal.loop on top).
//   - The runtime's: goroutines created by a function of package runtime.
//     Finalizer and cleanup goroutines appear in a dump while they run user
//     code, and every runtime worker appears under GOTRACEBACK=system.
//   - The execution tracer's reader (runtime.ReadTrace on its stack), which
//     go test -trace runs for the whole process.
package leakcheck

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// Wait is how long a goroutine that appeared since the snapshot may take to
// end before it is reported. goleak's retries add up to about half a
// second; the tests run on shared, loaded machines under the race
// detector, where a goroutine on its way out can take longer.
const Wait = 2 * time.Second

// maxDelay caps the pause between two looks, as goleak does.
const maxDelay = 100 * time.Millisecond

// Snapshot is the set of goroutines alive at one moment. The zero Snapshot
// is empty.
type Snapshot struct {
	ids map[uint64]bool
}

// Current takes a Snapshot of the goroutines alive now.
func Current() Snapshot {
	s := Snapshot{ids: map[uint64]bool{}}
	for _, g := range parse(dump()) {
		s.ids[g.id] = true
	}
	return s
}

// VerifyNone fails t, listing their stacks, if goroutines that are not in
// base and not ignored (see the package doc) are still alive after [Wait].
func VerifyNone(t testing.TB, base Snapshot) {
	t.Helper()
	verifyNone(t, base, search{wait: Wait})
}

// Check takes a Snapshot now and verifies, when t's Cleanup functions run,
// that no goroutine started since is alive.
func Check(t testing.TB) {
	t.Helper()
	check(t, search{wait: Wait})
}

// VerifyTestMain runs the tests and, if they passed, exits with status 1
// when goroutines other than the ignored ones are still alive after [Wait],
// listing their stacks on stderr. Call it as TestMain's only statement.
func VerifyTestMain(m *testing.M) {
	os.Exit(verifyMain(m, os.Stderr, search{wait: Wait}))
}

func check(t testing.TB, s search) {
	base := Current()
	t.Cleanup(func() {
		t.Helper()
		verifyNone(t, base, s)
	})
}

func verifyNone(t testing.TB, base Snapshot, s search) {
	t.Helper()
	if leaks := s.leaks(base); len(leaks) > 0 {
		t.Errorf("leakcheck: %s", report(leaks, s.wait))
	}
}

// verifyMain is VerifyTestMain without the exit: it returns the status.
func verifyMain(m interface{ Run() int }, stderr io.Writer, s search) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	if leaks := s.leaks(Snapshot{}); len(leaks) > 0 {
		fmt.Fprintf(stderr, "leakcheck: the tests passed, but %s", report(leaks, s.wait))
		return 1
	}
	return 0
}

func report(leaks []goroutine, wait time.Duration) string {
	traces := make([]string, len(leaks))
	for i, g := range leaks {
		traces[i] = g.trace
	}
	return fmt.Sprintf("%d goroutine(s) still alive after %v:\n\n%s\n",
		len(leaks), wait, strings.Join(traces, "\n\n"))
}

// search looks for leaked goroutines.
type search struct {
	wait time.Duration
	// looked, when set, is called after each look that found some; the
	// tests use it to end a goroutine between two looks.
	looked func(found []goroutine)
}

// leaks returns the goroutines that are neither in base, nor the caller,
// nor ignored, looking again with a growing pause until none is left or
// s.wait has passed.
func (s search) leaks(base Snapshot) []goroutine {
	self := currentID()
	deadline := time.Now().Add(s.wait)
	delay := time.Microsecond
	for {
		var found []goroutine
		for _, g := range parse(dump()) {
			if g.id != self && !base.ids[g.id] && !ignored(g) {
				found = append(found, g)
			}
		}
		left := time.Until(deadline)
		if len(found) == 0 || left <= 0 {
			return found
		}
		if s.looked != nil {
			s.looked(found)
		}
		time.Sleep(min(delay, left))
		delay = min(2*delay, maxDelay)
	}
}

// ignored reports whether g is one of the goroutines the package doc lists
// as not a leak.
func ignored(g goroutine) bool {
	switch g.top() {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel",
		"testing.runFuzzing", "testing.runFuzzTests":
		return strings.HasPrefix(g.state, "chan receive")
	case "os/signal.signal_recv", "os/signal.loop":
		return true
	}
	return strings.HasPrefix(g.creator, "runtime.") || g.calls("runtime.ReadTrace")
}
