package load

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
)

// profileFlag asks for the example's profiles under load, taken over its
// -pprof listener:
//
//	go test -run '^TestLoad$' -v ./... -args -size=50k -profile=/tmp/prof
//	go tool pprof -top /tmp/prof/cpu.pprof
var profileFlag = flag.String("profile", "", "`directory` to write the example's CPU profile of the writes (cpu.pprof) "+
	"and its heap at the final check (heap.pprof) into")

// A profiler takes the example's profiles from its -pprof listener.
type profiler struct {
	url    string // http://127.0.0.1:PORT/debug/pprof/
	dir    string
	client *http.Client
}

// newProfiler finds where p's profiler listens, from its log; p was
// started with -pprof.
func newProfiler(p *exampleproc.Process, dir string) (*profiler, error) {
	url, ok := profilerURL(p.Log())
	if !ok {
		return nil, fmt.Errorf("the example did not say where its profiler serves; its log:\n%s", p.Log())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// A connection of its own for each profile, closed after it, so that
	// none outlives the test.
	return &profiler{url: url, dir: dir, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}, nil
}

// profilerURL finds the url of the example's line
// `msg="serving the profiler" url=http://127.0.0.1:PORT/debug/pprof/`.
func profilerURL(log string) (string, bool) {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, `msg="serving the profiler"`) {
			continue
		}
		for field := range strings.FieldsSeq(line) {
			if url, ok := strings.CutPrefix(field, "url="); ok && strings.HasPrefix(url, "http://127.0.0.1:") {
				return url, true
			}
		}
	}
	return "", false
}

// save fetches profile (a path under /debug/pprof/, with its query) into
// the file name of the directory; the request lasts at most callTimeout
// beyond what the profile takes.
func (pr *profiler) save(ctx context.Context, profile, name string, takes time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, takes+callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pr.url+profile, nil)
	if err != nil {
		return err
	}
	resp, err := pr.client.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", profile, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s %.200s %v", profile, resp.Status, body, err)
	}
	return os.WriteFile(filepath.Join(pr.dir, name), body, 0o644)
}

// cpu starts a CPU profile of the next d, written to cpu.pprof; the
// returned channel receives how it ended.
func (pr *profiler) cpu(ctx context.Context, d time.Duration) <-chan error {
	done := make(chan error, 1)
	secs := max(1, int(d.Round(time.Second)/time.Second))
	go func() { done <- pr.save(ctx, fmt.Sprintf("profile?seconds=%d", secs), "cpu.pprof", d) }()
	return done
}

// heap writes the example's heap now to heap.pprof.
func (pr *profiler) heap(ctx context.Context) error {
	return pr.save(ctx, "heap", "heap.pprof", 0)
}

func TestProfilerURL(t *testing.T) {
	log := "time=x level=INFO msg=\"serving MCP over Streamable HTTP\" url=http://127.0.0.1:1/mcp\n" +
		"time=x level=INFO msg=\"serving the profiler\" url=http://127.0.0.1:2/debug/pprof/\n"
	if got, ok := profilerURL(log); !ok || got != "http://127.0.0.1:2/debug/pprof/" {
		t.Errorf("profilerURL = %q, %v; want the profiler's", got, ok)
	}
	if got, ok := profilerURL("level=INFO msg=\"serving the profiler\" url=http://10.0.0.1:2/debug/pprof/\n"); ok {
		t.Errorf("profilerURL took %q, which is not loopback", got)
	}
}
