package adapter

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConsumerModuleGraph builds the module graph of a program that imports
// only this package, as a user's would be, and of a plain mcp-go program.
// The adapter may add its own dependencies (x/time, invopop/jsonschema,
// santhosh-tekuri/jsonschema, x/text) but no database driver and no test
// library: those live in modules of their own (pgfeed, examples, bench, e2e).
func TestConsumerModuleGraph(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v)", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	withAdapter := moduleGraph(t, goCmd, root, `import _ "github.com/mcplive/adapter"`)
	plain := moduleGraph(t, goCmd, root, `import _ "github.com/mark3labs/mcp-go/server"`)

	forbidden := regexp.MustCompile(`jackc/|modernc\.org/|sqlite|go\.uber\.org/goleak|pgregory\.net/rapid|modelcontextprotocol/go-sdk|opentelemetry|prometheus|chromedp`)
	var added []string
	for _, m := range withAdapter {
		if forbidden.MatchString(m) {
			t.Errorf("a program importing only the adapter inherits %s", m)
		}
		if !strings.Contains(strings.Join(plain, "\n")+"\n", m+"\n") && !strings.HasPrefix(m, "example.com/") {
			added = append(added, m)
		}
	}
	t.Logf("modules: %d for a plain mcp-go program, %d with the adapter; added: %s",
		len(plain), len(withAdapter), strings.Join(added, ", "))
}

// moduleGraph returns `go list -m all` (module paths) of a fresh module whose
// one file has the given import, requiring this module through a replace.
func moduleGraph(t *testing.T, goCmd, root, imp string) []string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/consumer\n\ngo 1.25.5\n\nrequire github.com/mcplive/adapter v0.0.0\n\nreplace github.com/mcplive/adapter => " + root + "\n",
		"main.go": "package main\n\n" + imp + "\n\nfunc main() {}\n",
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	var mods []string
	for line := range strings.Lines(run("list", "-m", "all")) {
		if f := strings.Fields(line); len(f) > 0 {
			mods = append(mods, f[0])
		}
	}
	return mods
}
