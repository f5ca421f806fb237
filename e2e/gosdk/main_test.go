package gosdk

import (
	"testing"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
	"go.uber.org/goleak"
)

// example is examples/customers, built once by TestMain and then only run.
var example exampleproc.Example

func TestMain(m *testing.M) {
	// Built before the tests, so that a broken build is reported once,
	// outside every test's deadline.
	example.BuildOrExit()
	// No goroutine of go-sdk, of the HTTP client or of the process
	// plumbing may outlive the tests.
	goleak.VerifyTestMain(m, goleak.Cleanup(example.RemoveAndExit))
}
