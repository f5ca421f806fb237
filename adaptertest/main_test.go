package adaptertest_test

import (
	"testing"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// TestMain fails the package's tests if a goroutine outlives them: a Client
// ends everything it started, listen streams included, when its test ends.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
