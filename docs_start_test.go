//go:build unix

package adapter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// requireGuideEnv, set to 1 (as CI does), makes TestStartGuide fail rather
// than skip when 127.0.0.1:8080, the port of the guide's program, is taken.
const requireGuideEnv = "MCPLIVE_REQUIRE_GUIDE"

// freshCachesEnv, set to 1 (as CI does), makes TestStartGuide walk the
// guide as on a machine that never ran Go: empty module and build caches
// in the fresh home, every module downloaded and compiled as a new user's
// first run does. Otherwise it shares this machine's caches, to be quick.
const freshCachesEnv = "MCPLIVE_GUIDE_FRESH_CACHES"

// guideStepTimeout bounds each step of the guide the test runs: a go
// command, the server saying it serves, the watch saying it watches and
// hearing the write. The first build of a step compiles the adapter and
// mcp-go.
const guideStepTimeout = 3 * time.Minute

// mdBlock is a fenced block of a Markdown page.
type mdBlock struct {
	line int    // of the opening fence
	lang string // the fence's info string: go, sh, text
	code string
}

// fencedBlocks returns the fenced blocks of md, in order.
func fencedBlocks(md []byte) []mdBlock {
	var (
		blocks []mdBlock
		open   *mdBlock
		code   strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case open == nil && strings.HasPrefix(trimmed, "```"):
			open = &mdBlock{line: n, lang: strings.TrimPrefix(trimmed, "```")}
			code.Reset()
		case open != nil && trimmed == "```":
			open.code = code.String()
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		}
	}
	return blocks
}

// startGuide is what TestStartGuide takes from docs/start.md: the program
// and the commands, as the page shows them.
type startGuide struct {
	program   string   // the Go program
	cloneDest string   // where the reader clones the repository (~/…)
	setup     []string // the commands run in the program's directory
	serve     string   // the last of them, which serves
	serving   string   // what the page says the program prints when it serves
	taken     string   // what it says the program prints when the port is taken
	watch     string   // the watch command
	write     string   // the Inspector command that renames customer 1
	watchOut  string   // what the page shows the watch printing
	// firstRun is the longest the page says the first `go run .` takes
	// with empty caches.
	firstRun time.Duration
}

func readStartGuide(t *testing.T) startGuide {
	t.Helper()
	md, err := os.ReadFile("docs/start.md")
	if err != nil {
		t.Fatal(err)
	}
	var g startGuide
	blocks := fencedBlocks(md)
	for i, b := range blocks {
		switch {
		case b.lang == "go" && strings.HasPrefix(b.code, "package main\n") && g.program == "":
			g.program = b.code
		case b.lang == "sh" && strings.Contains(b.code, "git clone "):
			f := strings.Fields(b.code)
			g.cloneDest = f[len(f)-1]
		case b.lang == "sh" && strings.Contains(b.code, "go mod init"):
			g.setup = strings.Split(strings.TrimSpace(b.code), "\n")
			g.serve = g.setup[len(g.setup)-1]
		case b.lang == "sh" && strings.Contains(b.code, "mcplive-watch"):
			g.watch = strings.TrimSpace(b.code)
			for _, after := range blocks[i+1:] {
				if after.lang == "sh" && strings.Contains(after.code, "tools/call") && g.write == "" {
					g.write = strings.TrimSpace(after.code)
				}
				if after.lang == "text" {
					g.watchOut = after.code
					break
				}
			}
		}
	}
	if m := regexp.MustCompile("`go run \\.` prints `([^`]+)`").FindSubmatch(md); m != nil {
		g.serving = string(m[1])
	}
	if m := regexp.MustCompile("(?s)port is taken.*?`(listen tcp [^`]+)`").FindSubmatch(md); m != nil {
		g.taken = string(m[1])
	}
	if m := regexp.MustCompile(`with empty Go\s+caches it took between \d+ s \([^)]*\)\s+and (\d+) s`).FindSubmatch(md); m != nil {
		secs, _ := strconv.Atoi(string(m[1]))
		g.firstRun = time.Duration(secs) * time.Second
	}
	for what, got := range map[string]bool{
		"a Go program (package main)":                                                     g.program != "",
		"a `git clone` command":                                                           g.cloneDest != "",
		"a block of commands from `go mod init` to `go run .`":                            g.serve == "go run .",
		"what `go run .` prints (`go run .` prints `…`)":                                  g.serving != "",
		"what it prints when the port is taken (`listen tcp …`)":                          g.taken != "",
		"a command running mcplive-watch":                                                 !strings.Contains(g.watch, "\n") && g.watch != "",
		"a tools/call with the Inspector after the watch":                                 g.write != "",
		"what the watch prints (a ```text block after the watch command)":                 g.watchOut != "",
		"what the first run takes (with empty Go caches it took between N s (…) and N s)": g.firstRun > 0,
	} {
		if !got {
			t.Fatalf("docs/start.md no longer shows %s, which TestStartGuide runs", what)
		}
	}
	return g
}

// TestStartGuide follows docs/start.md as a reader on a fresh machine
// would, running the page's own commands: in a fresh home directory holding
// the clone (a link to this checkout) and a fresh module with the page's
// program, it runs the setup commands, checks what the program says when
// its port is taken, serves it, runs the page's watch command, renames
// customer 1 as the page's Inspector command does (with mcp-go's client:
// the test needs no Node.js), and checks that the watch prints what the
// page shows, times aside. It shares the module and build caches, so it
// downloads nothing that building this module did not.
func TestStartGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the guide's program and the watch tool: skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the go command is not on PATH (%v)", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	g := readStartGuide(t)
	home := t.TempDir()
	env := freshGoEnv(t, home)

	dest, ok := strings.CutPrefix(g.cloneDest, "~/")
	if !ok {
		t.Fatalf("docs/start.md clones into %q; the test expects a folder of the home directory (~/…)", g.cloneDest)
	}
	if err := os.Symlink(root, filepath.Join(home, dest)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "shop")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(g.program), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, line := range g.setup[:len(g.setup)-1] {
		ctx, cancel := context.WithTimeout(t.Context(), guideStepTimeout)
		out, err := shell(ctx, dir, env, line).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("docs/start.md's %q: %v\n%s", line, err, out)
		}
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := requiredVersion(t, "go.mod", "github.com/mark3labs/mcp-go"); requiredVersion(t, string(mod), "github.com/mark3labs/mcp-go") != want {
		t.Errorf("the guide's module requires mcp-go %s, want %s, the version the adapter is tested with:\n%s",
			requiredVersion(t, string(mod), "github.com/mark3labs/mcp-go"), want, mod)
	}

	// The port taken: the program must fail, saying what the page says,
	// and not say that it serves.
	holder, holdErr := net.Listen("tcp", "127.0.0.1:8080")
	ctx, cancel := context.WithTimeout(t.Context(), guideStepTimeout)
	compiled := time.Now()
	out, err := shell(ctx, dir, env, g.serve).CombinedOutput()
	checkFirstRunTime(t, g, time.Since(compiled))
	cancel()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), g.taken) || strings.Contains(string(out), g.serving) {
		t.Errorf("with 127.0.0.1:8080 taken, %q ended with %v, saying:\n%s\nwant exit status 1 and %q, and not %q", g.serve, err, out, g.taken, g.serving)
	}
	if holdErr != nil {
		if os.Getenv(requireGuideEnv) == "1" {
			t.Fatalf("127.0.0.1:8080, where the guide's program serves, is taken: %v", holdErr)
		}
		t.Skipf("127.0.0.1:8080, where the guide's program serves, is taken (%v): not running the rest (set %s=1 to fail instead)", holdErr, requireGuideEnv)
	}
	holder.Close()

	server := startGroup(t, dir, env, g.serve)
	server.out.waitFor(t, g.serving, guideStepTimeout)

	watch := startGroup(t, dir, env, g.watch)
	watch.out.waitFor(t, "mcplive-watch: watching", guideStepTimeout)
	callLikeInspector(t, g.write)
	want := normalizeTimes(g.watchOut)
	watch.out.waitForLines(t, strings.Count(want, "\n"), guideStepTimeout)
	// `go run` itself exits 1 when interrupted, whatever its program did:
	// what tells that the watch stopped cleanly is that it printed nothing
	// more (cmd/mcplive-watch's tests check its own exit status).
	watch.interrupt(t)
	if got := normalizeTimes(watch.out.String()); got != want {
		t.Errorf("the watch printed:\n%s\ndocs/start.md shows:\n%s\n(times replaced by TIME)", got, want)
	}
	server.interrupt(t)
}

// checkFirstRunTime holds what docs/start.md says the first `go run .`
// takes with empty caches (the longest figure it gives) to the time it
// took here: with MCPLIVE_GUIDE_FRESH_CACHES=1 the run compiles everything,
// and a page that says less than half of what it took says too little.
// Otherwise the caches are warm and the time is only logged.
func checkFirstRunTime(t *testing.T, g startGuide, took time.Duration) {
	t.Helper()
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("the first `go run .` took %v (docs/start.md: up to %v with empty caches; load %s)", took.Round(time.Second), g.firstRun, strings.TrimSpace(string(load)))
	if os.Getenv(freshCachesEnv) == "1" && took > 2*g.firstRun {
		t.Errorf("with empty caches the first `go run .` took %v; docs/start.md says up to %v: say what it takes", took.Round(time.Second), g.firstRun)
	}
}

// freshGoEnv is the environment of a fresh machine whose home is home, with
// this machine's Go settings for where modules come from and the caches.
func freshGoEnv(t *testing.T, home string) []string {
	t.Helper()
	keys := []string{"GOPATH", "GOMODCACHE", "GOCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOTOOLCHAIN"}
	out, err := exec.Command("go", append([]string{"env", "-json"}, keys...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var settings map[string]string
	if err := json.Unmarshal(out, &settings); err != nil {
		t.Fatal(err)
	}
	drop := append([]string{"HOME", "GOFLAGS", "GOWORK", "GOENV"}, keys...)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slicesContains(drop, k) {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home)
	if os.Getenv(freshCachesEnv) == "1" {
		gopath := filepath.Join(home, "go")
		settings["GOPATH"], settings["GOMODCACHE"] = gopath, filepath.Join(gopath, "pkg", "mod")
		settings["GOCACHE"] = filepath.Join(home, ".cache", "go-build")
		t.Cleanup(func() {
			// The module cache is read-only: go removes it.
			clean := exec.Command("go", "clean", "-modcache")
			clean.Env = append(slices.Clone(env), "GOPATH="+gopath, "GOMODCACHE="+settings["GOMODCACHE"])
			if out, err := clean.CombinedOutput(); err != nil {
				t.Errorf("go clean -modcache: %v\n%s", err, out)
			}
		})
	}
	for _, k := range keys {
		if settings[k] != "" {
			env = append(env, k+"="+settings[k])
		}
	}
	return env
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// requiredVersion returns the version a go.mod (its text, or "go.mod" for
// this module's) requires of module.
func requiredVersion(t *testing.T, gomod, module string) string {
	t.Helper()
	if gomod == "go.mod" {
		b, err := os.ReadFile("go.mod")
		if err != nil {
			t.Fatal(err)
		}
		gomod = string(b)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+(\S+)`).FindStringSubmatch(gomod)
	if m == nil {
		return ""
	}
	return m[1]
}

// shell runs line with bash, as a reader would type it.
func shell(ctx context.Context, dir string, env []string, line string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	return cmd
}

// group is a command running in a process group of its own, as in a
// terminal: `go run` starts the program as a child, and Ctrl-C reaches
// both.
type group struct {
	line   string
	cmd    *exec.Cmd
	out    *guideOutput
	exited chan struct{}
}

func startGroup(t *testing.T, dir string, env []string, line string) *group {
	t.Helper()
	g := &group{line: line, cmd: shell(context.Background(), dir, env, "exec "+line), out: &guideOutput{changed: make(chan struct{}, 1)}, exited: make(chan struct{})}
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out // one pipe, so the order is kept
	g.cmd.WaitDelay = 10 * time.Second
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
			<-g.exited
		}
		if t.Failed() {
			t.Logf("%q printed:\n%s", line, g.out)
		}
	})
	return g
}

// interrupt sends Ctrl-C's SIGINT to the group and returns the exit status.
func (g *group) interrupt(t *testing.T) int {
	t.Helper()
	if err := syscall.Kill(-g.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatalf("interrupt %q: %v", g.line, err)
	}
	select {
	case <-g.exited:
		return g.cmd.ProcessState.ExitCode()
	case <-time.After(guideStepTimeout):
		t.Fatalf("%q did not end within %v of Ctrl-C", g.line, guideStepTimeout)
		return -1
	}
}

// guideOutput is what a command of the guide prints; a test waits on it.
type guideOutput struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (o *guideOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	select {
	case o.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *guideOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *guideOutput) waitUntil(t *testing.T, done func(string) bool, what string, timeout time.Duration) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for !done(o.String()) {
		select {
		case <-o.changed:
		case <-timer.C:
			t.Fatalf("no %s within %v; printed:\n%s", what, timeout, o)
		}
	}
}

func (o *guideOutput) waitFor(t *testing.T, text string, timeout time.Duration) {
	t.Helper()
	o.waitUntil(t, func(s string) bool { return strings.Contains(s, text) }, fmt.Sprintf("%q", text), timeout)
}

func (o *guideOutput) waitForLines(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	o.waitUntil(t, func(s string) bool { return strings.Count(s, "\n") >= n }, fmt.Sprintf("%d lines", n), timeout)
}

var printedTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`)

func normalizeTimes(s string) string { return printedTime.ReplaceAllString(s, "TIME") }

// callLikeInspector makes the tools/call that an Inspector command line
// (npx … --cli URL … --method tools/call --tool-name N --tool-arg k=v …)
// makes, with mcp-go's client. Like the Inspector, it takes a value that
// parses as JSON as that JSON, and any other as a string.
func callLikeInspector(t *testing.T, line string) {
	t.Helper()
	words := shellWords(t, line)
	var url, tool string
	args := map[string]any{}
	for i := 0; i+1 < len(words); i++ {
		switch words[i] {
		case "--cli":
			url = words[i+1]
		case "--tool-name":
			tool = words[i+1]
		case "--tool-arg":
			k, v, _ := strings.Cut(words[i+1], "=")
			var value any
			if json.Unmarshal([]byte(v), &value) != nil {
				value = v
			}
			args[k] = value
		}
	}
	if url == "" || tool == "" {
		t.Fatalf("cannot tell the URL and the tool of %q", line)
	}
	ctx, cancel := context.WithTimeout(t.Context(), guideStepTimeout)
	defer cancel()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "guide-test", Version: "0"},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil || res.IsError {
		t.Fatalf("%q: %+v, %v", line, res, err)
	}
}

// shellWords splits a command line as bash would, for the quoting the
// guide uses: words separated by spaces, single-quoted strings.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}
