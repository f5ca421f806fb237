package adapter_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// publishedModules are the modules tagged for programs to require
// (docs/releasing.md); every other module of go.work is never published.
var publishedModules = map[string]bool{
	"github.com/mcplive/adapter":        true,
	"github.com/mcplive/adapter/pgfeed": true,
	"github.com/mcplive/adapter/otel":   true,
}

var (
	moduleLine    = regexp.MustCompile(`(?m)^module (\S+)$`)
	releaseSemver = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
)

// TestModuleRequirements checks the rules of docs/releasing.md on every
// go.mod of the workspace: a published module requires no module of this
// repository that is not published (a module of tests, say, which a
// program requiring it could not resolve), and every module requires a
// published one at a release version, one version throughout, never at
// the zero pseudo-version that only a replace line resolves.
func TestModuleRequirements(t *testing.T) {
	work, err := os.ReadFile("go.work")
	if err != nil {
		t.Fatal(err)
	}
	dirs := regexp.MustCompile(`(?m)^\s+(\./\S*|\.)$`).FindAllStringSubmatch(string(work), -1)
	if len(dirs) < 3 {
		t.Fatalf("go.work lists %d modules; want the library, pgfeed, otel and the others", len(dirs))
	}
	versions := map[string]string{} // of each published module, as the first go.mod to require it says
	for _, d := range dirs {
		file := filepath.Join(d[1], "go.mod")
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := moduleLine.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s names no module", file)
		}
		self := string(m[1])
		for _, r := range requireLine.FindAllSubmatch(b, -1) {
			path, v := string(r[1]), string(r[2])
			if !strings.HasPrefix(path, "github.com/mcplive/adapter") {
				continue
			}
			switch {
			case publishedModules[self] && !publishedModules[path]:
				t.Errorf("%s requires %s, which is never published: a program requiring %s could not resolve it", file, path, self)
			case publishedModules[path] && !releaseSemver.MatchString(v):
				t.Errorf("%s requires %s at %s; want the release version it is to be tagged as (docs/releasing.md)", file, path, v)
			case publishedModules[path] && versions[path] == "":
				versions[path] = v
			case publishedModules[path] && versions[path] != v:
				t.Errorf("%s requires %s at %s, another go.mod at %s: one version throughout", file, path, v, versions[path])
			}
		}
	}
	for path := range publishedModules {
		if path != "github.com/mcplive/adapter" && versions[path] == "" {
			t.Errorf("no module of the workspace requires %s: is it still in go.work?", path)
		}
	}
}
