package fleet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
)

// requireHAProxyEnv turns "HAProxy is not installed" from a skip into a
// failure, as MCPLIVE_REQUIRE_POSTGRES does for PostgreSQL. CI sets it.
const requireHAProxyEnv = "MCPLIVE_REQUIRE_HAPROXY"

// shippedConfig is the balancer configuration the example ships, which
// the test runs with only its addresses changed (render).
const shippedConfig = "../../examples/customers/haproxy.cfg"

// haproxyStart bounds how long HAProxy may take to proxy its first
// request, and haproxyStop how long it may take to exit on SIGTERM.
const (
	haproxyStart = 15 * time.Second
	haproxyStop  = 10 * time.Second
)

// haproxyBinary finds HAProxy, Debian's package's or another on PATH, or
// ends the test: skipped, or failed when requireHAProxyEnv is 1.
func haproxyBinary(t testing.TB) string {
	t.Helper()
	if path, err := exec.LookPath("haproxy"); err == nil {
		return path
	}
	// Debian installs it in /usr/sbin, which a user's PATH may lack.
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	const msg = "HAProxy not found (apt-get install haproxy); set " + requireHAProxyEnv + "=1 to fail instead"
	if os.Getenv(requireHAProxyEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// A balancer is a running HAProxy.
type balancer struct {
	// URL is the MCP endpoint through the balancer,
	// http://127.0.0.1:PORT/mcp.
	URL string
	log *exampleproc.Log
}

// startBalancer runs HAProxy with the shipped configuration in front of
// the instances at servers (host:port each). It listens on a loopback
// port the test takes first and hands over as file descriptor 3 (the
// configuration's bind becomes fd@3), so that no other process can take
// it in between. It returns once HAProxy has proxied a request to /healthz;
// when the test ends it stops HAProxy with SIGTERM.
func startBalancer(t *testing.T, bin string, servers []string) *balancer {
	t.Helper()
	shipped, err := os.ReadFile(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := render(string(shipped), "fd@3", servers)
	if err != nil {
		t.Fatalf("%s: %v", shippedConfig, err)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	file, err := ln.(*net.TCPListener).File() // a duplicate: stays open after ln.Close
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close() // HAProxy has its own copy once started

	b := &balancer{URL: "http://" + addr + "/mcp", log: new(exampleproc.Log)}
	// -db: in the foreground, not as a daemon, so that the test owns the
	// process and its logs.
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.ExtraFiles = []*os.File{file}
	cmd.Stdout, cmd.Stderr = b.log, b.log
	cmd.WaitDelay = haproxyStop
	if err := cmd.Start(); err != nil {
		t.Fatalf("start HAProxy: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(haproxyStop):
			cmd.Process.Kill()
			<-exited
			t.Errorf("HAProxy did not exit within %v of SIGTERM", haproxyStop)
		}
		if t.Failed() {
			t.Logf("HAProxy's log (its last 64 KiB at most):\n%s", b.log)
		}
	})

	// The port listens already: the request waits in its backlog until
	// HAProxy accepts it.
	ctx, cancel := context.WithTimeout(context.Background(), haproxyStart)
	defer cancel()
	ready := make(chan error, 1)
	go func() { ready <- getOK(ctx, "http://"+addr+"/healthz") }()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("HAProxy did not proxy /healthz within %v: %v; its log:\n%s", haproxyStart, err, b.log)
		}
	case <-exited:
		t.Fatalf("HAProxy exited before proxying anything (%v); its log:\n%s", waitErr, b.log)
	}
	return b
}

// getOK GETs url on a connection of its own and wants 200.
func getOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	rt := &http.Transport{DisableKeepAlives: true}
	defer rt.CloseIdleConnections()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return nil
}

// render returns the configuration cfg with the address of its one bind
// line replaced by bind and those of its server lines, in order, by
// servers: the only changes the test makes to the shipped file. It fails
// unless cfg has exactly one bind and exactly len(servers) servers, so
// that a file that grew or lost an instance, or a second frontend, is not
// run half-changed.
func render(cfg, bind string, servers []string) (string, error) {
	lines := strings.SplitAfter(cfg, "\n")
	binds, next := 0, 0
	for i, line := range lines {
		switch directive(line) {
		case "bind":
			binds++
			lines[i] = replaceField(line, 1, bind)
		case "server":
			if next == len(servers) {
				return "", fmt.Errorf("more than the %d server lines the test replaces", len(servers))
			}
			lines[i] = replaceField(line, 2, servers[next])
			next++
		}
	}
	switch {
	case binds != 1:
		return "", fmt.Errorf("%d bind lines, want the 1 the test replaces", binds)
	case next != len(servers):
		return "", fmt.Errorf("%d server lines, want the %d the test replaces", next, len(servers))
	}
	return strings.Join(lines, ""), nil
}

// directive is the first word of a configuration line, "" for a blank
// line or a comment.
func directive(line string) string {
	fields := strings.Fields(line)
	if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
		return ""
	}
	return fields[0]
}

// replaceField returns line with its n-th whitespace-separated field
// (from 0) replaced by value, every other byte kept; line itself if it has
// no such field.
func replaceField(line string, n int, value string) string {
	start, field := -1, -1
	for i := 0; i <= len(line); i++ {
		space := i == len(line) || line[i] == ' ' || line[i] == '\t' || line[i] == '\n' || line[i] == '\r'
		switch {
		case !space && start < 0:
			start = i
			field++
		case space && start >= 0:
			if field == n {
				return line[:start] + value + line[i:]
			}
			start = -1
		}
	}
	return line
}
