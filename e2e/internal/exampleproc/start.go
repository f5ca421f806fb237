package exampleproc

import (
	"context"
	"os/exec"
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
	bin, err := e.Binary()
	if err != nil {
		t.Fatal(err)
	}
	return startHTTP(t, bin)
}

func startHTTP(t testing.TB, bin string) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = StopGrace // then killed, and Wait stops copying its stderr
	log := new(Log)
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		stop()
		t.Fatalf("start the example: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait() // reports the cancellation; the exit status tells the rest
		close(exited)
	}()
	t.Cleanup(func() {
		stop()
		<-exited // at most StopGrace, then it is killed
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("the example exited with status %d, want 0 (a graceful shutdown on SIGTERM)", code)
		}
		if t.Failed() {
			t.Logf("log of the example (its last 64 KiB at most):\n%s", log)
		}
	})
	timeout := time.NewTimer(startTimeout)
	defer timeout.Stop()
	select {
	case url := <-log.served():
		return url
	case <-exited:
		t.Fatalf("the example exited with status %d before serving; its log:\n%s", cmd.ProcessState.ExitCode(), log)
	case <-timeout.C:
		t.Fatalf("the example did not say where it serves within %v; its log:\n%s", startTimeout, log)
	}
	return ""
}
