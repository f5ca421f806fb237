package adapter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/version"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The modules a program takes in: the library and the two it may add.
// Their go lines decide which Go a user's module needs.
var consumedModules = []struct{ dir, path string }{
	{".", "github.com/mcplive/adapter"},
	{"pgfeed", "github.com/mcplive/adapter/pgfeed"},
	{"otel", "github.com/mcplive/adapter/otel"},
}

var (
	goLine      = regexp.MustCompile(`(?m)^go (\S+)$`)
	requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?([a-z0-9.\-]+\.[a-z]+/\S+) (v\S+)(?: // indirect)?$`)
)

// goLineOf returns the go line of a go.mod.
func goLineOf(t *testing.T, gomod []byte, name string) string {
	t.Helper()
	m := goLine.FindSubmatch(gomod)
	if m == nil {
		t.Fatalf("%s has no go line", name)
	}
	return string(m[1])
}

// TestGoLines holds the go line of each module a program takes in to the
// lowest version its requirements need, so that adding the library never
// moves a user's module to a newer Go than its dependencies do: the newest
// go line among the modules it requires (go mod tidy sees to the other
// direction). The library's own is mcp-go's, and the README and Start
// here say what it is.
func TestGoLines(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v)", err)
	}
	local := map[string]string{} // the go lines of the repository's modules, by path
	for _, m := range consumedModules {
		b, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		local[m.path] = goLineOf(t, b, m.dir+"/go.mod")
	}
	for _, m := range consumedModules {
		b, _ := os.ReadFile(filepath.Join(m.dir, "go.mod"))
		own := local[m.path]
		need, by := "1.0", "nothing"
		var remote []string
		for _, r := range requireLine.FindAllSubmatch(b, -1) {
			path, v := string(r[1]), string(r[2])
			if line, ok := local[path]; ok { // a sibling, replaced by this tree
				if version.Compare("go"+line, "go"+need) > 0 {
					need, by = line, path
				}
				continue
			}
			remote = append(remote, path+"@"+v)
		}
		for mod, line := range requiredGoLines(t, goCmd, m.dir, remote) {
			if version.Compare("go"+line, "go"+need) > 0 {
				need, by = line, mod
			}
		}
		if own != need {
			t.Errorf("%s/go.mod says go %s; what it requires needs go %s (%s): the go line is to be that, and no more", m.dir, own, need, by)
		}
	}

	root := local["github.com/mcplive/adapter"]
	mcpgo := requiredGoLines(t, goCmd, ".", []string{"github.com/mark3labs/mcp-go@" + requiredVersion(t, "go.mod", "github.com/mark3labs/mcp-go")})
	for mod, line := range mcpgo {
		if root != line {
			t.Errorf("the library's go line is %s, mcp-go's (%s) %s: a team on mcp-go would have to move to a newer Go to add the library", root, mod, line)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	says := regexp.MustCompile("The library's `go` line is ([0-9.]+)").FindSubmatch(readme)
	if says == nil || string(says[1]) != root {
		t.Errorf("README.md must say \"The library's `go` line is %s\"; it says %q", root, says)
	}
	start, err := os.ReadFile("docs/start.md")
	if err != nil {
		t.Fatal(err)
	}
	if says := regexp.MustCompile(`You need Go\s+([0-9.]+)`).FindSubmatch(start); says == nil || string(says[1]) != root {
		t.Errorf("docs/start.md must say \"You need Go %s\" (or later); it says %q", root, says)
	}
}

// requiredGoLines returns the go line of each module (path@version), as
// its own go.mod in the module cache says, downloading what is missing.
func requiredGoLines(t *testing.T, goCmd, dir string, mods []string) map[string]string {
	t.Helper()
	if len(mods) == 0 {
		return nil
	}
	cmd := exec.Command(goCmd, append([]string{"mod", "download", "-json"}, mods...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download in %s: %v\n%s", dir, err, out)
	}
	lines := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Version, GoMod, Error string }
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Error != "" {
			t.Fatalf("go mod download %s@%s: %s", m.Path, m.Version, m.Error)
		}
		b, err := os.ReadFile(m.GoMod)
		if err != nil {
			t.Fatal(err)
		}
		line := "1.16" // a go.mod without a go line is read as go 1.16
		if g := goLine.FindSubmatch(b); g != nil {
			line = string(g[1])
		}
		lines[m.Path+"@"+m.Version] = line
	}
	return lines
}

func TestRequireLine(t *testing.T) {
	gomod := "module x\n\ngo 1.25.5\n\nrequire github.com/a/b v1.2.3\n\nrequire (\n\tgolang.org/x/text v0.41.0 // indirect\n\tgithub.com/c/d/v2 v2.0.0-20240101000000-abcdef123456\n)\n"
	var got []string
	for _, m := range requireLine.FindAllStringSubmatch(gomod, -1) {
		got = append(got, m[1]+"@"+m[2])
	}
	want := "github.com/a/b@v1.2.3 golang.org/x/text@v0.41.0 github.com/c/d/v2@v2.0.0-20240101000000-abcdef123456"
	if strings.Join(got, " ") != want {
		t.Errorf("requireLine found %q, want %q", got, want)
	}
}
