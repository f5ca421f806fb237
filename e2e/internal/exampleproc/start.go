package exampleproc

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// StopGrace is how long a stopping example may take after SIGTERM (or, on
// stdio, after its stdin closes) before it is killed. The example itself
// waits at most 5 s for requests in flight.
const StopGrace = 10 * time.Second

// startTimeout bounds how long the example may take to say where it
// listens.
const startTimeout = 30 * time.Second

// StartHTTP starts the example serving Streamable HTTP on a free loopback
// port and returns its MCP endpoint, http://127.0.0.1:PORT/mcp. The port
// is the one the example's own listener got for 127.0.0.1:0, read from its
// log, so no other process can take it in between. It builds the example
// first if no one has.
//
// When the test ends the example is stopped with SIGTERM and must exit
// with status 0; if the test failed, its log is printed.
func (e *Example) StartHTTP(t testing.TB) string {
	t.Helper()
	return e.Start(t).URL
}

// Start is StartHTTP with more flags for the example after
// -addr 127.0.0.1:0 (which args must not repeat), such as
// "-postgres", url; it returns the running process, which a test may kill
// as a crash would.
func (e *Example) Start(t testing.TB, args ...string) *Process {
	t.Helper()
	bin, err := e.Binary()
	if err != nil {
		t.Fatal(err)
	}
	return start(t, bin, args...)
}

// Process is one running example, started by Start.
type Process struct {
	// URL is its MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string

	cmd    *exec.Cmd
	log    *Log
	exited chan struct{} // closed once the process has exited
	killed atomic.Bool
}

// Addr is the address the example listens on, 127.0.0.1:PORT.
func (p *Process) Addr() string {
	u, err := url.Parse(p.URL)
	if err != nil {
		return "" // never: URL comes from servingURL, which checked its form
	}
	return u.Host
}

// Kill ends the example with SIGKILL, as a crash or the kernel's OOM
// killer would: no shutdown, its connections reset, its sessions gone. It
// returns once the process has exited, within StopGrace. The test's
// cleanup then expects that death instead of a graceful exit.
func (p *Process) Kill() error {
	p.killed.Store(true)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(StopGrace):
		return errors.New("the example did not exit within " + StopGrace.String() + " of SIGKILL")
	}
}

// Pid is the example's process ID, for reading what the kernel counts of
// it (/proc/PID/stat, /proc/PID/status).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Log is what the example has logged so far, its last 64 KiB at most.
func (p *Process) Log() string { return p.log.String() }

// Exited is closed once the process has exited, for whatever reason.
func (p *Process) Exited() <-chan struct{} { return p.exited }

func start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = StopGrace // then killed, and Wait stops copying its stderr
	p := &Process{cmd: cmd, log: new(Log), exited: make(chan struct{})}
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		stop()
		t.Fatalf("start the example: %v", err)
	}
	go func() {
		cmd.Wait() // reports the cancellation; the exit status tells the rest
		close(p.exited)
	}()
	t.Cleanup(func() {
		stop()
		<-p.exited // at most StopGrace, then it is killed
		if p.killed.Load() {
			if !killedBySIGKILL(cmd) {
				t.Errorf("the example was killed with SIGKILL, yet it exited with %v", cmd.ProcessState)
			}
		} else if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("the example exited with status %d, want 0 (a graceful shutdown on SIGTERM)", code)
		}
		if t.Failed() {
			t.Logf("log of the example %s (its last 64 KiB at most):\n%s", p.URL, p.log)
		}
	})
	timeout := time.NewTimer(startTimeout)
	defer timeout.Stop()
	select {
	case p.URL = <-p.log.served():
		if _, _, err := net.SplitHostPort(p.Addr()); err != nil {
			t.Fatalf("the example serves at %q, which names no host and port", p.URL)
		}
		return p
	case <-p.exited:
		t.Fatalf("the example exited with status %d before serving; its log:\n%s", cmd.ProcessState.ExitCode(), p.log)
	case <-timeout.C:
		t.Fatalf("the example did not say where it serves within %v; its log:\n%s", startTimeout, p.log)
	}
	return nil
}

// killedBySIGKILL reports whether cmd's process died of SIGKILL.
func killedBySIGKILL(cmd *exec.Cmd) bool {
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
