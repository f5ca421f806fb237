package exampleproc

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeEnv makes the test binary play the example (see fakeExample).
const fakeEnv = "EXAMPLEPROC_FAKE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fakeExample(mode))
	}
	// No goroutine of the process plumbing may outlive the tests.
	goleak.VerifyTestMain(m)
}

// fakeExample stands in for examples/customers, so that start is tested
// without building it. It listens on -addr and logs where, as the example
// does; then, in mode "serve", it exits 0 on SIGTERM, in mode "unclean" 1.
// In mode "early" it exits 3 before serving. Given -want V, it exits 6
// unless -extra V came after -addr.
func fakeExample(mode string) int {
	flags := flag.NewFlagSet("fake", flag.ContinueOnError)
	addr := flags.String("addr", "", "listen address")
	extra := flags.String("extra", "", "a flag the test passes")
	want := flags.String("want", "", "what -extra must be")
	if err := flags.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *extra != *want || os.Args[1] != "-addr" {
		return 6
	}
	if mode == "early" {
		fmt.Fprintln(os.Stderr, "level=ERROR msg=\"open the database\" err=boom")
		return 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	defer ln.Close()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	logger.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "pid", os.Getpid())
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute): // never outlive a broken test
		return 5
	}
	if mode == "unclean" || mode == "kill-unclean" {
		return 1
	}
	return 0
}

// TestStart runs the fake example through start and checks what it
// returns, that it stops the process, and what it reports as failures.
func TestStart(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode        string
		serves      bool
		wantFailure string // "" for none
	}{
		{"serve", true, ""},
		{"unclean", true, "the example exited with status 1, want 0"},
		{"early", false, "the example exited with status 3 before serving"},
		{"kill", true, ""},
		{"kill-unclean", true, "the example was killed with SIGKILL, yet it exited with exit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Setenv(fakeEnv, tt.mode) // the fake inherits it
			rec := &recorder{TB: t}
			var url string
			rec.run(func(tb testing.TB) {
				p := start(tb, self, "-extra", "x", "-want", "x")
				url = p.URL
				switch tt.mode {
				case "kill":
					if err := p.Kill(); err != nil {
						tb.Errorf("Kill: %v", err)
					}
					select {
					case <-p.Exited():
					default:
						tb.Errorf("Kill returned before the process exited")
					}
				case "kill-unclean":
					// The process exits by itself first: Kill finds it gone,
					// and the cleanup reports that it did not die of SIGKILL.
					p.cmd.Process.Signal(syscall.SIGTERM)
					<-p.Exited()
					if err := p.Kill(); err != nil {
						tb.Errorf("Kill of an exited process: %v", err)
					}
				}
				if pid := fmt.Sprintf("pid=%d\n", p.Pid()); !strings.Contains(p.Log(), pid) {
					tb.Errorf("Pid() = %d; the example logged %q", p.Pid(), p.Log())
				}
				if want := strings.TrimPrefix(url, "http://"); !strings.HasSuffix(want, "/mcp") || p.Addr()+"/mcp" != want {
					tb.Errorf("Addr() = %q for URL %q", p.Addr(), url)
				}
			})

			if got := rec.report(); (got == "") != (tt.wantFailure == "") || !strings.Contains(got, tt.wantFailure) {
				t.Errorf("startHTTP reported %q; want a failure with %q", got, tt.wantFailure)
			}
			if tt.mode == "early" && !strings.Contains(rec.report(), "err=boom") {
				t.Errorf("the failure %q does not show the example's log", rec.report())
			}
			if !tt.serves {
				return
			}
			host, ok := strings.CutSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
			if !strings.HasPrefix(url, "http://127.0.0.1:") || !ok {
				t.Fatalf("endpoint %q, want http://127.0.0.1:PORT/mcp", url)
			}
			// The cleanups ran: the fake's listener must be gone.
			if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
				conn.Close()
				t.Errorf("%s still accepts connections after the test ended", host)
			}
		})
	}
}

// recorder is a testing.TB that records failures instead of failing the
// test it wraps, so that a test can check what startHTTP reports. Fatalf
// ends the calling goroutine, as testing's does.
type recorder struct {
	testing.TB

	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Logf(string, ...any) {}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// run calls f as a test body would be, then the cleanups, last first.
func (r *recorder) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// report returns the failures, one a line.
func (r *recorder) report() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.failures, "\n")
}
