package load

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// startTimeout bounds how long the example may take to say where it
	// listens.
	startTimeout = 30 * time.Second
	// stopGrace is how long the example may take to exit after SIGTERM
	// before it is killed. It itself waits at most 5 s for requests in
	// flight.
	stopGrace = 10 * time.Second
	// serverLogCap bounds the example's log kept for a failing test's report.
	serverLogCap = 64 << 10
)

// startExample starts the example serving Streamable HTTP on a free
// loopback port and returns its MCP endpoint. The port is the one the
// example's own listener got for 127.0.0.1:0, read from its log, so no
// other process can take it in between. The example is stopped with
// SIGTERM when the test ends, must exit with status 0, and its log is
// printed if the test failed.
func startExample(t *testing.T) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, exampleBinary, "-addr", "127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace // then killed, and Wait stops copying its stderr
	log := newServerLog()
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
		<-exited // at most stopGrace, then it is killed
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("the example exited with status %d, want 0 (a graceful shutdown on SIGTERM)", code)
		}
		if t.Failed() {
			t.Logf("log of the example (last %d bytes at most):\n%s", serverLogCap, log)
		}
	})
	select {
	case url := <-log.url:
		return url
	case <-exited:
		t.Fatalf("the example exited with status %d before serving; its log:\n%s", cmd.ProcessState.ExitCode(), log)
	case <-time.After(startTimeout):
		t.Fatalf("the example did not say where it serves within %v; its log:\n%s", startTimeout, log)
	}
	return ""
}

// serverLog is an io.Writer for the example's stderr: it keeps the last
// serverLogCap bytes for a failing test's report and hands over the MCP
// URL from the line that says where the example serves.
type serverLog struct {
	url chan string // receives the MCP endpoint once

	mu      sync.Mutex
	buf     []byte
	partial []byte // the unfinished last line
	found   bool
}

func newServerLog() *serverLog { return &serverLog{url: make(chan string, 1)} }

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - serverLogCap; over > 0 {
		l.buf = l.buf[over:]
	}
	if !l.found {
		l.partial = append(l.partial, p...)
		for {
			line, rest, ok := bytes.Cut(l.partial, []byte("\n"))
			if !ok {
				break
			}
			l.partial = rest
			if url, ok := servingURL(string(line)); ok {
				l.found, l.partial = true, nil
				l.url <- url
				break
			}
		}
		if len(l.partial) > serverLogCap {
			l.partial = nil // a runaway line: never the one we want
		}
	}
	return len(p), nil
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// servingURL finds the url attribute of the example's log line
// `msg="serving MCP over Streamable HTTP" url=http://127.0.0.1:PORT/mcp`.
func servingURL(line string) (string, bool) {
	if !strings.Contains(line, `msg="serving MCP over Streamable HTTP"`) {
		return "", false
	}
	for field := range strings.FieldsSeq(line) {
		if url, ok := strings.CutPrefix(field, "url="); ok && strings.HasPrefix(url, "http://127.0.0.1:") {
			return url, true
		}
	}
	return "", false
}
