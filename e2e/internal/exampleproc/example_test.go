package exampleproc

import (
	"strings"
	"testing"
)

// TestBinaryNeedsTheWorkspace checks that outside the workspace the build
// fails at once and says why, rather than with go build's words about a
// package outside the main module.
func TestBinaryNeedsTheWorkspace(t *testing.T) {
	t.Setenv("GOWORK", "off")
	var e Example
	bin, err := e.Binary()
	if err == nil || !strings.Contains(err.Error(), "GOWORK=off") {
		t.Fatalf("Binary() = %q, %v; want an error that names GOWORK=off", bin, err)
	}
	if again, err2 := e.Binary(); again != bin || err2 != err {
		t.Errorf("a second Binary() = %q, %v; want the first call's %q, %v", again, err2, bin, err)
	}
	if e.dir != "" {
		t.Errorf("a failed build left the directory %q", e.dir)
	}
}
