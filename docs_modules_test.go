//go:build unix

package adapter_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// moduleGuide is what TestModuleGuides takes from the section "In a module
// of your own" of a page: the program and the commands that build it.
type moduleGuide struct {
	program  string
	commands []string
}

// The pages that tell how to take a module of the repository besides the
// library into a module of one's own, and the module each is about.
var moduleGuidePages = []struct{ page, module string }{
	{"docs/many-instances.md", "github.com/mcplive/adapter/pgfeed"},
	{"docs/observability.md", "github.com/mcplive/adapter/otel"},
}

func readModuleGuide(t *testing.T, page string) moduleGuide {
	t.Helper()
	md, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(md), "\n### In a module of your own\n")
	if !ok {
		t.Fatalf("%s has no section \"In a module of your own\", which TestModuleGuides runs", page)
	}
	if end := regexp.MustCompile(`\n##+ `).FindStringIndex(section); end != nil {
		section = section[:end[0]]
	}
	var g moduleGuide
	for _, b := range fencedBlocks([]byte(section)) {
		switch {
		case b.lang == "go" && strings.HasPrefix(b.code, "package main\n") && g.program == "":
			g.program = b.code
		case b.lang == "sh" && strings.Contains(b.code, "go mod init") && g.commands == nil:
			g.commands = strings.Split(strings.TrimSpace(b.code), "\n")
		}
	}
	if g.program == "" || g.commands == nil {
		t.Fatalf("%s's \"In a module of your own\" no longer shows a program (package main) and a block of commands from `go mod init` on", page)
	}
	return g
}

// TestModuleGuides follows, for pgfeed and otel, the section of their page
// that tells how to build a program on them in a module of one's own: in a
// fresh home holding the clone (a link to this checkout) it writes the
// page's program into a fresh directory and runs the page's commands, each
// as a reader would type it, with empty module and build caches, so that
// every requirement of the module, and every requirement of those, must
// resolve from what the page says alone: a replace line for each module
// the program imports. It runs with MCPLIVE_GUIDE_FRESH_CACHES=1, as in
// CI: the programs take in pgx and OpenTelemetry's SDK, which the
// library's own tests do not, and a new user's `go test ./...` should not
// wait for them.
func TestModuleGuides(t *testing.T) {
	if os.Getenv(freshCachesEnv) != "1" {
		t.Skipf("downloads and builds pgfeed's and otel's programs with empty caches: set %s=1 to run it, as CI does", freshCachesEnv)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cloneDest := readStartGuide(t).cloneDest
	dest, ok := strings.CutPrefix(cloneDest, "~/")
	if !ok {
		t.Fatalf("docs/start.md clones into %q; the test expects a folder of the home directory (~/…)", cloneDest)
	}
	for _, p := range moduleGuidePages {
		t.Run(p.page, func(t *testing.T) {
			g := readModuleGuide(t, p.page)
			home := t.TempDir()
			env := freshGoEnv(t, home)
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
			for _, line := range g.commands {
				ctx, cancel := context.WithTimeout(t.Context(), guideStepTimeout)
				out, err := shell(ctx, dir, env, line).CombinedOutput()
				cancel()
				if err != nil {
					t.Fatalf("%s's %q: %v\n%s", p.page, line, err, out)
				}
			}
			mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if requiredVersion(t, string(mod), p.module) == "" {
				t.Errorf("the guide's module does not require %s:\n%s", p.module, mod)
			}
			// One replace line per module the program imports, and none
			// for a module it does not: the library and this one.
			replaces := regexp.MustCompile(`(?m)^replace (\S+) =>`).FindAllStringSubmatch(string(mod), -1)
			var replaced []string
			for _, r := range replaces {
				replaced = append(replaced, r[1])
			}
			if got, want := strings.Join(replaced, " "), p.module+" github.com/mcplive/adapter"; got != want {
				t.Errorf("the guide's module replaces %q, want %q", got, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "shop")); err != nil {
				t.Errorf("the guide's commands built no ./shop: %v", err)
			}
		})
	}
}
