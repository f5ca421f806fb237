package browser

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
	// stopGrace is how long a stopping example may take after SIGTERM
	// before it is killed. The example itself waits at most 5 s.
	stopGrace = 10 * time.Second
	// serverLogCap bounds the example's log kept for a failing test.
	serverLogCap = 64 << 10
)

// startExample starts the example binary serving HTTP on a free loopback
// port and returns its base URL (http://127.0.0.1:PORT), read from its
// log. It is stopped with SIGTERM when the test ends, must exit with
// status 0, and its log is printed if the test failed.
func startExample(t *testing.T, bin string) string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	log := &serverLog{url: make(chan string, 1)}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		stop()
		t.Fatalf("start the example: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stop()
		<-exited
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("the example exited with status %d, want 0 (a graceful shutdown on SIGTERM)", code)
		}
		if t.Failed() {
			t.Logf("log of the example:\n%s", log)
		}
	})
	select {
	case url := <-log.url:
		return strings.TrimSuffix(url, "/mcp")
	case <-exited:
		t.Fatalf("the example exited with status %d before serving; its log:\n%s", cmd.ProcessState.ExitCode(), log)
	case <-time.After(startTimeout):
		t.Fatalf("the example did not say where it serves within %v; its log:\n%s", startTimeout, log)
	}
	return ""
}

// serverLog keeps the last serverLogCap bytes of the example's stderr and
// hands over the MCP URL from the line that says where it serves.
type serverLog struct {
	url chan string

	mu      sync.Mutex
	buf     []byte
	partial []byte
	found   bool
}

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - serverLogCap; over > 0 {
		l.buf = l.buf[over:]
	}
	if l.found {
		return len(p), nil
	}
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
