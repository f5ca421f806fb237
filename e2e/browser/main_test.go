package browser

import (
	"os"
	"os/exec"
	"testing"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
	"go.uber.org/goleak"
)

// example is examples/customers, built when the first test that needs it
// runs (none does when Chromium is absent).
var example exampleproc.Example

func TestMain(m *testing.M) {
	// No goroutine of chromedp, of the HTTP client or of the process
	// plumbing may outlive the tests.
	goleak.VerifyTestMain(m, goleak.Cleanup(example.RemoveAndExit))
}

// requireChromiumEnv names the variable that makes a missing Chromium a
// failure rather than a skip; .ci/run sets it.
const requireChromiumEnv = "MCPLIVE_REQUIRE_CHROMIUM"

// chromium returns the path of Chromium, from MCPLIVE_CHROMIUM or the PATH.
// Without one the test is skipped, or fails when MCPLIVE_REQUIRE_CHROMIUM=1.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPLIVE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const how = "no Chromium found (looked for MCPLIVE_CHROMIUM, chromium and chromium-browser on the PATH): " +
		"install Debian's with `apt-get install chromium chromium-driver`"
	if os.Getenv(requireChromiumEnv) == "1" {
		t.Fatal(how + "; " + requireChromiumEnv + "=1 makes this a failure")
	}
	t.Skip(how + "; skipped (" + requireChromiumEnv + "=1 makes this a failure)")
	return ""
}
