package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// buildTimeout bounds the build of the example, which on a cold cache
// compiles SQLite.
const buildTimeout = 5 * time.Minute

// buildDir holds the example's binary, built at most once, when the first
// test that needs it runs (none does when Chromium is absent).
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "browser-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	// No goroutine of chromedp, of the HTTP client or of the process
	// plumbing may outlive the tests.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// exampleBinary builds examples/customers from the repository root (two
// levels up), once, so that the test drives the binary users run.
var exampleBinary = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	bin := filepath.Join(buildDir, "customers")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/customers")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/customers: %v\n%s", err, out)
	}
	return bin, nil
})

// requireChromiumEnv names the variable that makes a missing Chromium a
// failure rather than a skip; .ci/run sets it.
const requireChromiumEnv = "MCPLIVE_REQUIRE_CHROMIUM"

// chromium returns the path of Chromium, from MCPLIVE_CHROMIUM or the PATH.
// Without one the test is skipped, or fails when MCPLIVE_REQUIRE_CHROMIUM=1.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPLIVE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const how = "no Chromium found (looked for MCPLIVE_CHROMIUM, chromium and chromium-browser on the PATH): " +
		"install Debian's with `apt-get install chromium chromium-driver`"
	if os.Getenv(requireChromiumEnv) == "1" {
		t.Fatal(how + "; " + requireChromiumEnv + "=1 makes this a failure")
	}
	t.Skip(how + "; skipped (" + requireChromiumEnv + "=1 makes this a failure)")
	return ""
}
