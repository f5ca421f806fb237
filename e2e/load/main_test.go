package load

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// exampleBinary is the path of examples/customers, built once by TestMain
// and then only read.
var exampleBinary string

// buildTimeout bounds the build of the example, which on a cold cache
// compiles SQLite. It is not part of the load test's own time budget.
const buildTimeout = 5 * time.Minute

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "load-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exampleBinary, err = buildExample(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// No goroutine of the clients, of the HTTP transport or of the process
	// plumbing may outlive the tests.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// buildExample builds examples/customers from the repository root (two
// levels up) into dir, so that the test loads the binary users run, with
// the adapter of this checkout.
func buildExample(dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	bin := filepath.Join(dir, "customers")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/customers")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/customers: %v\n%s", err, out)
	}
	return bin, nil
}
