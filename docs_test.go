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
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A Go block of the README or the guide that starts with "package" is a whole
// program a reader may copy into a file of their own; TestDocsProgramsBuild
// holds it to that. Other blocks are fragments, and the text around each says
// what it needs.

// docBlock is one fenced Go block of a Markdown file.
type docBlock struct {
	file string
	line int // of the opening fence
	code string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// goBlocks returns the ```go blocks of markdown, in order.
func goBlocks(file string, markdown []byte) []docBlock {
	var (
		blocks []docBlock
		open   *docBlock
		code   strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(markdown))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case open == nil && strings.TrimSpace(line) == "```go":
			open = &docBlock{file: file, line: n}
			code.Reset()
		case open != nil && strings.TrimSpace(line) == "```":
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

func TestGoBlocks(t *testing.T) {
	md := "# T\n\n```go\npackage main\n\nfunc main() {}\n```\n\ntext\n\n```sh\ngo run .\n```\n\n  ```go\n  x := 1\n  ```\n"
	got := goBlocks("t.md", []byte(md))
	want := []docBlock{
		{file: "t.md", line: 3, code: "package main\n\nfunc main() {}\n"},
		{file: "t.md", line: 15, code: "  x := 1\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("goBlocks:\n got %q\nwant %q", got, want)
	}
}

// docPrograms returns the Go blocks of README.md and docs/*.md that start
// with a package clause.
func docPrograms(t *testing.T) []docBlock {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var programs []docBlock
	for _, file := range append([]string{"README.md"}, files...) {
		md, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range goBlocks(file, md) {
			// A program on pgfeed or otel needs those modules too:
			// TestModuleGuides builds it as its page says.
			if strings.HasPrefix(b.code, "package ") && !strings.Contains(b.code, `"github.com/mcplive/adapter/pgfeed"`) && !strings.Contains(b.code, `adapter/otel"`) {
				programs = append(programs, b)
			}
		}
	}
	return programs
}

// TestDocsProgramsBuild builds every program of the README and the guide as
// a reader would: alone, in a fresh module that requires this one (replaced
// by this working tree, so the docs are checked against the code beside
// them). The go command resolves the new module from the module cache that
// building this module's tests has filled, with this module's go.sum, so the
// test needs no network. A program that listens on 127.0.0.1:8080 is also
// run while that port is taken: it must fail, saying why, rather than exit 0
// or serve nothing silently.
func TestDocsProgramsBuild(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v): cannot build the docs' programs", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	programs := docPrograms(t)
	if len(programs) < 2 {
		t.Fatalf("found %d programs in README.md and docs/, want at least the README's and docs/start.md's", len(programs))
	}
	for _, b := range programs {
		t.Run(b.String(), func(t *testing.T) {
			bin := buildDocProgram(t, goCmd, root, b)
			if bin != "" && strings.Contains(b.code, `"127.0.0.1:8080"`) {
				wantListenFailure(t, bin)
			}
		})
	}
}

// buildDocProgram builds and vets b in a module of its own and returns the
// path of the binary, or "" when b is not package main.
func buildDocProgram(t *testing.T, goCmd, root string, b docBlock) string {
	t.Helper()
	dir := t.TempDir()
	goMod := "module example.com/docprogram\n\n" + goDirective(t) + "\n\n" +
		"require github.com/mcplive/adapter v0.0.0\n\n" +
		"replace github.com/mcplive/adapter => " + root + "\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": []byte(b.code)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := []string{"build", "."}
	bin := ""
	if strings.HasPrefix(b.code, "package main\n") {
		bin = filepath.Join(dir, "program")
		build = []string{"build", "-o", bin, "."}
	}
	for _, args := range [][]string{build, {"vet", "."}} {
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		// -mod=mod lets the go command add the requirements the program's
		// imports need (mcp-go, say) from the adapter's own module graph.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s of the program at %s: %v\n%s", strings.Join(args, " "), b, err, out)
		}
	}
	return bin
}

// goDirective is this module's go line, so that the fresh module needs no
// other toolchain.
func goDirective(t *testing.T) string {
	t.Helper()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mod)) {
		if strings.HasPrefix(line, "go ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

// wantListenFailure runs bin while 127.0.0.1:8080 is taken (by this test, or
// already by someone else) and expects it to exit non-zero with a message
// naming the address.
func wantListenFailure(t *testing.T, bin string) {
	t.Helper()
	if ln, err := net.Listen("tcp", "127.0.0.1:8080"); err == nil {
		defer ln.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("with 127.0.0.1:8080 taken, the program was still running after 30s: it must fail to listen\n%s", stderr.Bytes())
	case !errors.As(err, &exit):
		t.Fatalf("with 127.0.0.1:8080 taken, the program exited with %v, want a non-zero status\n%s", err, stderr.Bytes())
	case !strings.Contains(stderr.String(), "127.0.0.1:8080"):
		t.Errorf("with 127.0.0.1:8080 taken, the program exited %d saying %q: want a message naming the address", exit.ExitCode(), stderr.Bytes())
	}
}

// The Inspector commands the README, the guide and the example print are
// the ones CI runs: the version CI installs (.ci/clients/package.json),
// pinned, and -y so that npx does not stop to ask.
func TestInspectorCommandsArePinned(t *testing.T) {
	pkg, err := os.ReadFile(".ci/clients/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var clients struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(pkg, &clients); err != nil {
		t.Fatal(err)
	}
	version := clients.Dependencies["@modelcontextprotocol/inspector"]
	if version == "" {
		t.Fatal(".ci/clients/package.json does not depend on @modelcontextprotocol/inspector")
	}
	want := "npx -y @modelcontextprotocol/inspector@" + version + " "
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	npx := regexp.MustCompile(`npx [^\n]*?@modelcontextprotocol/inspector\S* `)
	commands := 0
	for _, file := range append(files, "README.md", "examples/customers/http.go") {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range npx.FindAllString(string(text), -1) {
			commands++
			if cmd != want {
				t.Errorf("%s runs %q, want %q", file, cmd, want)
			}
		}
	}
	if commands == 0 {
		t.Error("no Inspector command found in the README, the guide or the example")
	}
}

// The README's whole-server example is examples/readme/main.go, which the
// build compiles; this keeps the two identical so the README cannot rot.
func TestReadmeShowsTheExampleVerbatim(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("examples/readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(src), "package main")
	if !ok || !strings.Contains(string(readme), "```go\npackage main"+code+"```") {
		t.Error("README.md does not show examples/readme/main.go (from `package main` on) verbatim")
	}
}

// What a re-run's context carries depends on the scope
// (TestRerunCarriesRequestValuesOnlyWithAScope): none of the request's
// values without one, the values of the request that made the query with
// one. A paragraph of the guides that speaks of a re-run and the request's
// values says which case it means, naming the scope, so that a reader of
// per-user data never meets the first case's sentence alone.
func TestGuidesSayWhichReRunCarriesValues(t *testing.T) {
	speaksOfValues := regexp.MustCompile(`(?i)re-?runs?\b[^.]*\bvalues|\bvalues\b[^.]*\bre-?runs?\b`)
	for _, page := range []string{"docs/watching.md", "docs/grants.md", "docs/glossary.md", "README.md"} {
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, para := range regexp.MustCompile(`\n\s*\n|\n- `).Split(string(md), -1) {
			para = strings.Join(strings.Fields(para), " ")
			if speaksOfValues.MatchString(para) && !strings.Contains(strings.ToLower(para), "scope") {
				t.Errorf("%s speaks of the values a re-run carries without saying with or without a scope: %q", page, para)
			}
		}
	}
}
