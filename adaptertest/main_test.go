package adaptertest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: a Client
// ends everything it started, listen streams included, when its test ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
