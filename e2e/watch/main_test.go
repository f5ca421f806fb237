package watch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
	"go.uber.org/goleak"
)

// example is examples/customers, built once by TestMain and then only run.
var example exampleproc.Example

// tool is the path of the built watch tool.
var tool string

func TestMain(m *testing.M) {
	// Both built before the tests, so that a broken build is reported
	// once, outside every test's deadline.
	example.BuildOrExit()
	dir, err := os.MkdirTemp("", "mcplive-watch-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tool = filepath.Join(dir, "mcplive-watch")
	if err := buildTool(tool); err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// No goroutine of the client or of the process plumbing may outlive
	// the tests.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		example.RemoveAndExit(code)
	}))
}

// buildTool builds cmd/mcplive-watch from the root of the workspace this
// test runs in: the tool users run, with this checkout's code.
func buildTool(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	if err != nil {
		return fmt.Errorf("go env GOWORK: %v", err)
	}
	work := strings.TrimSpace(string(out))
	if work == "" || work == "off" {
		return fmt.Errorf("no go.work: the end-to-end tests build cmd/mcplive-watch in the repository's workspace; run them inside the repository, without GOWORK=off")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/mcplive-watch")
	cmd.Dir = filepath.Dir(work)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/mcplive-watch: %v\n%s", err, out)
	}
	return nil
}
