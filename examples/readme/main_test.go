package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runMainEnv, when set, makes the test binary run main itself, for
// TestTakenPort.
const runMainEnv = "MCPLIVE_README_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestTakenPort runs the program while 127.0.0.1:8080 is taken (by this
// test, or by someone else already): it must exit with status 1 naming the
// address, and must not have said that it serves.
func TestTakenPort(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.1:8080"); err == nil {
		defer ln.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("with 127.0.0.1:8080 taken, the program still ran after 30s\n%s", out.Bytes())
	case !errors.As(err, &exit) || exit.ExitCode() != 1:
		t.Fatalf("with 127.0.0.1:8080 taken, the program ended with %v, want exit status 1\n%s", err, out.Bytes())
	}
	if got := out.String(); !strings.Contains(got, "listen tcp 127.0.0.1:8080") || strings.Contains(got, "serving") {
		t.Errorf("with 127.0.0.1:8080 taken, the program said %q: want why it cannot listen, and no word of serving", got)
	}
}
