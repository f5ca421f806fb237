package fleet

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// manyInstancesDoc is the page that shows the balancer configuration.
const manyInstancesDoc = "../../docs/many-instances.md"

// TestRenderChangesOnlyAddresses renders the shipped configuration as the
// fleet test does and checks that every line is the shipped one, except
// the address of the bind line and those of the server lines.
func TestRenderChangesOnlyAddresses(t *testing.T) {
	shipped := readFile(t, shippedConfig)
	servers := []string{"127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"}
	cfg, err := render(shipped, "fd@3", servers)
	if err != nil {
		t.Fatal(err)
	}
	want, got := strings.Split(shipped, "\n"), strings.Split(cfg, "\n")
	if len(got) != len(want) {
		t.Fatalf("rendered %d lines from %d", len(got), len(want))
	}
	var changed []string
	for i := range want {
		if got[i] == want[i] {
			continue
		}
		changed = append(changed, strings.Fields(got[i])[0])
		w, g := strings.Fields(want[i]), strings.Fields(got[i])
		addr := map[string]int{"bind": 1, "server": 2}[w[0]]
		if addr == 0 || len(g) != len(w) {
			t.Errorf("line %d changed from %q to %q", i+1, want[i], got[i])
			continue
		}
		g[addr], w[addr] = "", ""
		if !slices.Equal(g, w) {
			t.Errorf("line %d changed beyond its address: %q to %q", i+1, want[i], got[i])
		}
	}
	if !slices.Equal(changed, []string{"bind", "server", "server", "server"}) {
		t.Errorf("changed the lines %q, want bind and the three servers", changed)
	}
	for _, addr := range append(servers, "fd@3") {
		if !strings.Contains(cfg, " "+addr+"\n") {
			t.Errorf("the rendered configuration lacks %s:\n%s", addr, cfg)
		}
	}
}

// TestRenderRefusesAnotherShape: a configuration with more or fewer
// servers or binds than the test replaces is an error, not half a change.
func TestRenderRefusesAnotherShape(t *testing.T) {
	const base = "frontend f\n    bind :80\nbackend b\n    server a 10.0.0.1:80 check\n    server b 10.0.0.2:80\n"
	if got, err := render(base, "fd@3", []string{"x:1", "y:2"}); err != nil ||
		got != "frontend f\n    bind fd@3\nbackend b\n    server a x:1 check\n    server b y:2\n" {
		t.Errorf("render = %q, %v", got, err)
	}
	for name, cfg := range map[string]string{
		"three servers": base + "    server c 10.0.0.3:80\n",
		"one server":    "frontend f\n    bind :80\nbackend b\n    server a 10.0.0.1:80\n",
		"two binds":     base + "frontend g\n    bind :81\n",
		"no bind":       "backend b\n    server a 10.0.0.1:80 check\n    server b 10.0.0.2:80\n",
	} {
		if got, err := render(cfg, "fd@3", []string{"x:1", "y:2"}); err == nil {
			t.Errorf("%s: rendered %q, want an error", name, got)
		}
	}
	// A commented-out line is no directive.
	if _, err := render("    # bind :81\n"+base, "fd@3", []string{"x:1", "y:2"}); err != nil {
		t.Errorf("a commented bind counted: %v", err)
	}
}

// TestDocsShowTheShippedConfig: docs/many-instances.md shows the shipped
// file whole, byte for byte, and starts the instances at the addresses
// its servers name, with the balancer trusted for X-Forwarded-For.
func TestDocsShowTheShippedConfig(t *testing.T) {
	shipped, doc := readFile(t, shippedConfig), readFile(t, manyInstancesDoc)
	blocks := regexp.MustCompile("(?s)```haproxy\n(.*?)```\n").FindAllStringSubmatch(doc, -1)
	if len(blocks) != 1 || blocks[0][1] != shipped {
		t.Fatalf("%s has %d haproxy blocks; want one, equal to %s (copy the file into it)", manyInstancesDoc, len(blocks), shippedConfig)
	}
	var servers int
	for line := range strings.Lines(shipped) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "server" {
			servers++
			if !strings.Contains(doc, "-addr "+f[2]+" -trusted-proxy 127.0.0.1") {
				t.Errorf("%s starts no instance with -addr %s -trusted-proxy 127.0.0.1, where %s sends requests", manyInstancesDoc, f[2], shippedConfig)
			}
		}
	}
	if servers != 3 {
		t.Errorf("%s has %d servers, want 3", shippedConfig, servers)
	}
}

// TestShippedConfigIsValid asks HAProxy itself.
func TestShippedConfigIsValid(t *testing.T) {
	out, err := exec.Command(haproxyBinary(t), "-c", "-f", shippedConfig).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c -f %s: %v\n%s", shippedConfig, err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
