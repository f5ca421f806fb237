package adapter_test

import (
	"os"
	"strings"
	"testing"
)

// The README's whole-server example is examples/readme/main.go, which the
// build compiles; this keeps the two identical so the README cannot rot.
func TestReadmeShowsTheExampleVerbatim(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("examples/readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(src), "package main")
	if !ok || !strings.Contains(string(readme), "```go\npackage main"+code+"```") {
		t.Error("README.md does not show examples/readme/main.go (from `package main` on) verbatim")
	}
}
