package chaos

import (
	"testing"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
	"go.uber.org/goleak"
)

// example is examples/customers, built once by TestMain and then only run.
var example exampleproc.Example

func TestMain(m *testing.M) {
	// Built before the test, so that the build, which on a cold cache
	// compiles SQLite, is not part of the chaos test's own time budget.
	example.BuildOrExit()
	// No goroutine of the clients, the proxies, the HTTP transports or
	// the process plumbing may outlive the tests.
	goleak.VerifyTestMain(m, goleak.Cleanup(example.RemoveAndExit))
}
