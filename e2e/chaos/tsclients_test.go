package chaos

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tsScript drives the TypeScript clients (testdata/tsclients.mjs).
//
//go:embed testdata/tsclients.mjs
var tsScript []byte

// The TypeScript client kinds, as tsclients.mjs names them, and the kind
// each is reported as.
var tsKinds = []struct{ script, kind string }{
	{"sdk1-legacy", "sdk 1.x " + legacyEra},
	{"client2-legacy", "client 2.x " + legacyEra},
	{"client2-modern", "client 2.x " + modernEra},
}

// tsConfig is one client of tsclients.mjs.
type tsConfig struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	URL       string   `json:"url"`
	URIs      []string `json:"uris"`
	FixResume bool     `json:"fixResume"`
}

// nodeModules finds node (20 or newer) and the npm clients .ci/real-clients.sh
// installs into .ci/node; why not, when it cannot.
func nodeModules() (node, modules string, why string) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", "", "no node on PATH"
	}
	out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output()
	if major, aerr := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || aerr != nil || major < 20 {
		return "", "", fmt.Sprintf("node %s is not 20 or newer", strings.TrimSpace(string(out)))
	}
	gowork, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(gowork)) == "" || strings.TrimSpace(string(gowork)) == "off" {
		return "", "", "no go.work: run inside the repository"
	}
	modules = filepath.Join(filepath.Dir(strings.TrimSpace(string(gowork))), ".ci", "node", "node_modules")
	for _, pkg := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/client"} {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			return "", "", fmt.Sprintf("%s is not installed in %s (bash .ci/real-clients.sh installs it)", pkg, modules)
		}
	}
	return node, modules, ""
}

// tsProcess is the node process running the TypeScript clients.
type tsProcess struct {
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	stderr *tailBuffer
	lines  sync.WaitGroup
	closed chan struct{} // closed when the script said it closed every client
	exited chan struct{}
	err    error // of the process, once exited is closed
	ready  map[string]chan struct{}
}

// startTS starts the node process with its clients, whose lines go to
// their logs; problems of no client go to orphan.
func startTS(t *testing.T, node, modules string, clients []tsConfig, logs map[string]*clientLog, orphan *clientLog) *tsProcess {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "tsclients.mjs")
	if err := os.WriteFile(script, tsScript, 0o644); err != nil {
		t.Fatal(err)
	}
	// The script resolves its packages from node_modules beside it.
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(clients)
	if err != nil {
		t.Fatal(err)
	}
	p := &tsProcess{stderr: &tailBuffer{}, closed: make(chan struct{}), exited: make(chan struct{}), ready: make(map[string]chan struct{})}
	for _, c := range clients {
		p.ready[c.Name] = make(chan struct{})
	}
	p.cmd = exec.Command(node, script, string(cfg))
	p.cmd.Dir = dir
	p.cmd.Stderr = p.stderr
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.lines.Go(func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.line(sc.Bytes(), logs, orphan)
		}
	})
	go func() {
		p.lines.Wait() // before Wait closes stdout
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// tsEvent is one line of tsclients.mjs.
type tsEvent struct {
	C       string   `json:"c"`
	Ev      string   `json:"ev"`
	URI     string   `json:"uri"`
	T       float64  `json:"t"`
	T0      float64  `json:"t0"`
	T1      float64  `json:"t1"`
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Kind    string   `json:"kind"`
	URIs    []string `json:"uris"`
	What    string   `json:"what"`
	LEI     string   `json:"lei"`
	ID      string   `json:"id"`
	Msg     string   `json:"msg"`
}

// msTime is a time the script wrote: milliseconds since the epoch.
func msTime(ms float64) time.Time { return time.UnixMicro(int64(ms * 1000)) }

var tsOpenKinds = map[string]openKind{"first": openFirst, "resume": openResume, "afresh": openAfresh, "relisten": openRelisten}

func (p *tsProcess) line(b []byte, logs map[string]*clientLog, orphan *clientLog) {
	var e tsEvent
	if err := json.Unmarshal(b, &e); err != nil {
		orphan.problem(fmt.Errorf("tsclients.mjs printed %.200q", b))
		return
	}
	if e.Ev == "closed" {
		close(p.closed)
		return
	}
	l := logs[e.C]
	if l == nil {
		if e.Ev == "problem" {
			orphan.problem(errors.New(e.Msg))
		} else {
			orphan.problem(fmt.Errorf("tsclients.mjs printed %.200q, of no client", b))
		}
		return
	}
	switch e.Ev {
	case "note":
		l.noted(e.URI, msTime(e.T))
	case "read":
		l.readDone(read{uri: e.URI, start: msTime(e.T0), end: msTime(e.T1), name: e.Name, version: e.Version})
	case "open":
		kind, ok := tsOpenKinds[e.Kind]
		if !ok {
			l.problem(fmt.Errorf("an open of kind %q", e.Kind))
			return
		}
		l.opened(kind, msTime(e.T), e.URIs)
		l.mark(msTime(e.T), fmt.Sprintf("stream opened: %s, Last-Event-ID %q", e.Kind, e.LEI))
	case "id":
		l.mark(msTime(e.T), "event id "+e.ID)
	case "count":
		switch e.What {
		case "retried":
			l.count(&l.retried)
		case "restored":
			l.count(&l.restored)
		case "dups":
			l.count(&l.dups)
		default:
			l.problem(fmt.Errorf("a count of %q", e.What))
		}
	case "ready":
		close(p.ready[e.C])
	case "problem":
		l.problem(errors.New(e.Msg))
	default:
		l.problem(fmt.Errorf("tsclients.mjs printed %.200q", b))
	}
}

// tsStopGrace bounds how long the script takes to close its clients
// (3 s each step at most, all at once) and exit.
const tsStopGrace = 15 * time.Second

// stop closes the script's standard input, which closes its clients, and
// waits for it to exit; it kills it when it does not in time.
func (p *tsProcess) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.stdin.Close()
	timer := time.NewTimer(tsStopGrace)
	defer timer.Stop()
	select {
	case <-p.exited:
		select {
		case <-p.closed:
		default:
			t.Errorf("tsclients.mjs exited (%v) without closing its clients; its stderr:\n%s", p.err, p.stderr)
		}
		if p.err != nil {
			t.Errorf("tsclients.mjs: %v; its stderr:\n%s", p.err, p.stderr)
		}
	case <-timer.C:
		p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("tsclients.mjs did not exit within %v of its stdin closing; killed. Its stderr:\n%s", tsStopGrace, p.stderr)
	}
}

// awaitReady waits until every client said it is ready, or ctx ends.
func (p *tsProcess) awaitReady(ctx context.Context) error {
	for name, ch := range p.ready {
		select {
		case <-ch:
		case <-p.exited:
			return fmt.Errorf("tsclients.mjs exited (%v) before client %s was ready; its stderr:\n%s", p.err, name, p.stderr)
		case <-ctx.Done():
			return fmt.Errorf("client %s was not subscribed with every URI read: %w", name, ctx.Err())
		}
	}
	return nil
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 16<<10; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
