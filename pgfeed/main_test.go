package pgfeed_test

import (
	"testing"

	"github.com/mcplive/adapter/pgfeed/pgtest"
	"go.uber.org/goleak"
)

// One PostgreSQL server serves all tests of the package, each test in a
// database of its own; goleak then checks that nothing is left running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.WithShared(m))
}
