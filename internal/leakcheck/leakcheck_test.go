package leakcheck

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// short is the wait of the searches that are expected to report: long
// enough to be a real retry, short enough to keep the tests quick.
const short = 50 * time.Millisecond

// park starts a goroutine, running parked, that waits for stop to close;
// the returned channel closes once it has ended.
func park(stop <-chan struct{}) (ended <-chan struct{}) {
	done := make(chan struct{})
	go parked(stop, done)
	return done
}

func parked(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	<-stop
}

// unpark ends a parked goroutine and waits until it has.
func unpark(stop chan struct{}, ended <-chan struct{}) {
	close(stop)
	<-ended
}

// recorder is a testing.TB that keeps what the checker reports and the
// Cleanup functions it registers, so that a failure can be asserted.
type recorder struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestLeakedGoroutineIsReported(t *testing.T) {
	base := Current()
	stop := make(chan struct{})
	ended := park(stop)
	defer unpark(stop, ended)

	rec := &recorder{TB: t}
	start := time.Now()
	verifyNone(rec, base, search{wait: short})
	if waited := time.Since(start); waited < short {
		t.Errorf("reported after %v, before the wait of %v was over", waited, short)
	}
	if len(rec.errors) != 1 {
		t.Fatalf("got %d errors, want 1: %q", len(rec.errors), rec.errors)
	}
	for _, want := range []string{"1 goroutine(s) still alive", "leakcheck.parked", "[chan receive"} {
		if !strings.Contains(rec.errors[0], want) {
			t.Errorf("report lacks %q:\n%s", want, rec.errors[0])
		}
	}
}

func TestEveryLeakIsListed(t *testing.T) {
	base := Current()
	stop := make(chan struct{})
	ended1, ended2 := park(stop), park(stop)
	defer func() { close(stop); <-ended1; <-ended2 }()

	leaks := search{wait: short}.leaks(base)
	if len(leaks) != 2 || leaks[0].id == leaks[1].id {
		t.Fatalf("got %d leaks, want the 2 parked goroutines: %+v", len(leaks), leaks)
	}
	for _, g := range leaks {
		if !g.calls("github.com/mcplive/adapter/internal/leakcheck.parked") {
			t.Errorf("leak is not a parked goroutine:\n%s", g.trace)
		}
	}
}

// A goroutine still alive at the first look but gone at a later one is on
// its way out, not leaked.
func TestGoroutineEndingWithinTheWaitIsNotReported(t *testing.T) {
	base := Current()
	stop := make(chan struct{})
	ended := park(stop)

	looks := 0
	s := search{wait: time.Minute, looked: func(found []goroutine) {
		looks++
		if looks == 1 {
			unpark(stop, ended)
		}
	}}
	if leaks := s.leaks(base); len(leaks) != 0 {
		t.Fatalf("reported %d goroutines that ended:\n%s", len(leaks), report(leaks, s.wait))
	}
	if looks == 0 {
		t.Fatal("the goroutine was never seen alive")
	}
}

func TestGoroutinesOfTheSnapshotAreNotReported(t *testing.T) {
	stop := make(chan struct{})
	ended := park(stop)
	defer unpark(stop, ended)
	base := Current()

	rec := &recorder{TB: t}
	verifyNone(rec, base, search{wait: short})
	if len(rec.errors) != 0 {
		t.Fatalf("reported a goroutine alive before the snapshot: %q", rec.errors)
	}
}

// The checking goroutine is not in its own snapshot when the check runs in
// another goroutine (a t.Cleanup of a subtest, say), and is not a leak.
func TestTheCheckingGoroutineIsNotReported(t *testing.T) {
	base := Current()
	got := make(chan []goroutine)
	go func() { got <- search{wait: short}.leaks(base) }()
	if leaks := <-got; len(leaks) != 0 {
		t.Fatalf("reported:\n%s", report(leaks, short))
	}
}

// A parallel subtest waiting for its parent to return is the test runner's,
// not a leak of the parent.
func TestWaitingParallelSubtestIsNotReported(t *testing.T) {
	base := Current()
	t.Run("parallel", func(t *testing.T) { t.Parallel() })
	if leaks := (search{wait: short}).leaks(base); len(leaks) != 0 {
		t.Fatalf("reported:\n%s", report(leaks, short))
	}
}

func TestCheckVerifiesAtCleanup(t *testing.T) {
	rec := &recorder{TB: t}
	check(rec, search{wait: short})
	stop := make(chan struct{})
	ended := park(stop)
	defer unpark(stop, ended) // runs after the assertions: the goroutine is alive at cleanup
	if len(rec.cleanups) != 1 || len(rec.errors) != 0 {
		t.Fatalf("Check registered %d cleanups and reported %q before the test ended", len(rec.cleanups), rec.errors)
	}
	rec.runCleanups()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "leakcheck.parked") {
		t.Fatalf("cleanup reported %q, want the parked goroutine", rec.errors)
	}
}

func TestCheckSeesWhatLaterCleanupsStop(t *testing.T) {
	rec := &recorder{TB: t}
	check(rec, search{wait: short})
	stop := make(chan struct{})
	ended := park(stop)
	rec.Cleanup(func() { unpark(stop, ended) }) // registered after Check: runs before it
	rec.runCleanups()
	if len(rec.errors) != 0 {
		t.Fatalf("reported a goroutine that a later Cleanup stopped: %q", rec.errors)
	}
}

// runner is a testing.M whose Run starts what start starts.
type runner struct {
	code  int
	start func()
}

func (r runner) Run() int {
	r.start()
	return r.code
}

func TestVerifyMain(t *testing.T) {
	stop := make(chan struct{})
	var parkedOnes []<-chan struct{}
	defer func() {
		close(stop)
		for _, ended := range parkedOnes {
			<-ended
		}
	}()
	leak := func() { parkedOnes = append(parkedOnes, park(stop)) }

	for _, tc := range []struct {
		name     string
		m        runner
		want     int
		reported bool
	}{
		// Nothing but the test runner's goroutines and this one is alive:
		// the ignore list covers what a test binary runs.
		{"clean", runner{0, func() {}}, 0, false},
		{"leak after passing tests", runner{0, leak}, 1, true},
		{"failed tests are not checked", runner{3, leak}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := verifyMain(tc.m, &stderr, search{wait: short}); got != tc.want {
				t.Errorf("status %d, want %d; stderr:\n%s", got, tc.want, stderr.String())
			}
			if reported := strings.Contains(stderr.String(), "leakcheck.parked"); reported != tc.reported {
				t.Errorf("stderr names the parked goroutine: %v, want %v:\n%s", reported, tc.reported, stderr.String())
			}
		})
	}
}
