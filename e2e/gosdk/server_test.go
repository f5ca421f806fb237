package gosdk

import (
	"os/exec"
	"testing"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport returns go-sdk's CommandTransport running the example with
// -stdio: the transport starts it on Connect, and ClientSession.Close
// closes its stdin and waits for it to exit (SIGTERM, then SIGKILL, after
// exampleproc.StopGrace). Its stderr is printed if the test failed.
func stdioTransport(t *testing.T) *mcp.CommandTransport {
	bin, err := example.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-stdio")
	log := new(exampleproc.Log)
	cmd.Stderr = log
	cmd.WaitDelay = exampleproc.StopGrace
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr of the stdio example (its last 64 KiB at most):\n%s", log)
		}
	})
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: exampleproc.StopGrace}
}
