package exampleproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// buildTimeout bounds the build of the example, which on a cold cache
// compiles SQLite.
const buildTimeout = 5 * time.Minute

// Example is the example application, examples/customers, built at most
// once into a temporary directory of its own. The zero Example is ready to
// use; a test binary keeps one in a package variable (see the package
// documentation).
type Example struct {
	once sync.Once
	dir  string // holds the binary; "" until built, and after a failed build
	bin  string
	err  error
}

// Binary returns the path of the example's binary, building it on the
// first call; later calls return what the first one did. A failed build
// is reported with the compiler's output.
func (e *Example) Binary() (string, error) {
	e.once.Do(func() { e.bin, e.err = e.build() })
	return e.bin, e.err
}

// BuildOrExit builds the example from TestMain, before any test, so that a
// broken build is reported once and outside every test's deadline. If the
// build fails it prints why and ends the test binary with status 1.
func (e *Example) BuildOrExit() {
	if _, err := e.Binary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// RemoveAndExit deletes the built binary and its directory, then ends the
// test binary with code. It is the cleanup that goleak.VerifyTestMain
// takes (goleak.Cleanup), which runs after the last test and must end the
// process itself.
func (e *Example) RemoveAndExit(code int) {
	if e.dir != "" {
		os.RemoveAll(e.dir) // what is left is in the system's temporary directory
	}
	os.Exit(code)
}

func (e *Example) build() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	root, err := workspaceRoot(ctx)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "mcplive-example-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "customers")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/customers")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./examples/customers: %v\n%s", err, out)
	}
	e.dir = dir
	return bin, nil
}

// workspaceRoot returns the repository root: the directory of the go.work
// that the test runs in. The example is a module of its own, so it builds
// only in that workspace, with this checkout's adapter.
func workspaceRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOWORK: %w", err)
	}
	work := strings.TrimSpace(string(out))
	if work == "" || work == "off" {
		return "", errors.New("no go.work: the e2e tests build examples/customers in the repository's workspace; run them inside the repository, without GOWORK=off")
	}
	return filepath.Dir(work), nil
}
