package watch

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// wait bounds every wait for the tool or the example.
const wait = 30 * time.Second

var (
	watchingLine = regexp.MustCompile(`mcplive-watch: watching 1 URI on \S+ \(protocol (\S+), [^)]+\); Ctrl-C stops\n`)
	updatedLine  = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) updated app://customers_show/1$`)
)

// TestWatchTheExample runs the watch tool against the example over
// Streamable HTTP, on each protocol version, makes a write with a
// tools/call from another client, and checks what the tool printed: the
// notification, and the diff of its re-read. With -count 1 the tool exits
// by itself; without, it is stopped as Ctrl-C stops it, with SIGINT, and
// must exit 0.
func TestWatchTheExample(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		count    bool // -count 1, else SIGINT after the notification
		name     string
	}{
		{"2026-07-28", true, "Ada King"},
		{"2025-11-25", true, "Augusta Ada King"},
		{"2026-07-28", false, "Ada Byron"},
		{"2025-11-25", false, "A. A. Lovelace"},
	} {
		name := tc.protocol + "/count"
		if !tc.count {
			name = tc.protocol + "/interrupt"
		}
		t.Run(name, func(t *testing.T) {
			endpoint := example.StartHTTP(t)
			args := []string{"-protocol", tc.protocol, "-diff", endpoint, "app://customers_show/1"}
			if tc.count {
				args = append([]string{"-count", "1"}, args...)
			}
			p := startTool(t, args...)
			if m := p.stderr.waitFor(t, watchingLine, "line saying it watches"); m[1] != tc.protocol {
				t.Fatalf("it says %q, want protocol %s", m[0], tc.protocol)
			}
			rename(t, endpoint, tc.name)
			p.stdout.waitFor(t, regexp.MustCompile(`read app://customers_show/1\n  -   "name": "Ada Lovelace",\n  \+   "name": "`+regexp.QuoteMeta(tc.name)+`",\n`), "diff of the re-read")
			if !tc.count {
				if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			if code := p.exit(t); code != 0 {
				t.Fatalf("exit status %d, want 0\nstderr:\n%s", code, p.stderr)
			}
			if n := len(updatedLine.FindAllString(p.stdout.String(), -1)); n != 1 {
				t.Errorf("%d notifications printed, want 1:\n%s", n, p.stdout)
			}
		})
	}
}

// rename renames customer 1 with a tools/call of customers_update, from a
// client of its own, as an agent would.
func rename(t *testing.T, endpoint, name string) {
	t.Helper()
	callTool(t, endpoint, "customers_update", map[string]any{"id": 1, "name": name})
}

// callTool makes a tools/call from a client of its own.
func callTool(t *testing.T, endpoint, tool string, args map[string]any) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "e2e-watch-writer", Version: "0"},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call %s: %+v, %v", tool, res, err)
	}
}

// proc is the tool running as a process of its own.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *output
	exited         chan struct{}
}

func startTool(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(tool, args...), stdout: newOutput(), stderr: newOutput(), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	return p.start(t)
}

// startToolOnePipe runs the tool with stdout and stderr on one pipe, in the
// order it wrote them, as a terminal shows them; both fields are that pipe.
func startToolOnePipe(t *testing.T, args ...string) *proc {
	t.Helper()
	out := newOutput()
	p := &proc{cmd: exec.Command(tool, args...), stdout: out, stderr: out, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	return p.start(t)
}

func (p *proc) start(t *testing.T) *proc {
	t.Helper()
	p.cmd.WaitDelay = wait
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("the tool's stdout:\n%s\nits stderr:\n%s", p.stdout, p.stderr)
		}
	})
	return p
}

// exit waits for the tool to exit and returns its status.
func (p *proc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(wait):
		t.Fatalf("the tool did not exit within %v", wait)
		return 0
	}
}

// output is where the tool writes; a test waits on it.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	select {
	case o.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output matches re and returns the match.
func (o *output) waitFor(t *testing.T, re *regexp.Regexp, what string) []string {
	t.Helper()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		if m := re.FindStringSubmatch(o.String()); m != nil {
			return m
		}
		select {
		case <-o.changed:
		case <-timeout.C:
			t.Fatalf("no %s within %v; the tool wrote:\n%s", what, wait, strings.TrimSpace(o.String()))
		}
	}
}
