package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// What an abandoned legacy session costs the example: a client opens a
// 2025-11-25 session, keeps a GET stream, subscribes to a dashboard of
// URIs, and then vanishes (its process killed, its laptop closed) without
// DELETE. The session and its subscriptions live on until the idle
// timeout (15 minutes in the example), so many such clients add up.
//
//	go test -run '^TestAbandonedSessions$' -v ./...
//	go test -run '^TestAbandonedSessions$' -v ./... -args -abandoned=500 -profile=/tmp/prof
//	go tool pprof -sample_index=inuse_space -top /tmp/prof/abandoned-heap.pprof
//
// The test speaks raw HTTP, so that the figure is the server's alone.

var abandonedFlag = flag.Int("abandoned", 0, "how many sessions TestAbandonedSessions abandons (default 500; 50 under the race detector)")

const (
	// abandonedSubscriptions is how many URIs each abandoned session watches.
	abandonedSubscriptions = 20
	// maxAbandonedBytes bounds what one abandoned session may add to the
	// example's heap in use: 500 of them at most 24 MB.
	maxAbandonedBytes = 48 << 10
	// legacyVersion is the protocol version the abandoned sessions speak.
	legacyVersion = "2025-11-25"
)

func TestAbandonedSessions(t *testing.T) {
	n := *abandonedFlag
	if n == 0 {
		n = abandonedDefault
	}
	proc := example.Start(t, "-pprof", "127.0.0.1:0")
	dir := *profileFlag
	if dir == "" {
		dir = t.TempDir()
	}
	prof, err := newProfiler(proc, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+time.Duration(n)*100*time.Millisecond)
	defer cancel()
	rt := newHTTPTransport()
	t.Cleanup(rt.CloseIdleConnections)
	hc := &http.Client{Transport: rt}
	endpoint := proc.URL

	// One session first, opened, subscribed and deleted, so that what the
	// server builds once (templates, pools, the queries' first runs) is in
	// the baseline, not in the sessions' share.
	warm, err := openAbandoned(ctx, hc, endpoint, 0)
	if err != nil {
		t.Fatal(err)
	}
	warm.close()
	if err := warm.delete(ctx, hc, endpoint); err != nil {
		t.Fatal(err)
	}
	rt.CloseIdleConnections()
	base, err := settledMemory(ctx, prof, proc)
	if err != nil {
		t.Fatal(err)
	}

	sessions := make([]*abandonedSession, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range setupParallelism {
		wg.Go(func() {
			for i := range next {
				s, err := openAbandoned(ctx, hc, endpoint, i+1)
				if err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					continue
				}
				sessions[i] = s
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	open, err := measureMemory(ctx, prof, proc)
	if err != nil {
		t.Fatal(err)
	}

	// The clients vanish: their connections close, and no DELETE comes.
	for _, s := range sessions {
		s.close()
	}
	rt.CloseIdleConnections()
	gone, err := settledMemory(ctx, prof, proc)
	if err != nil {
		t.Fatal(err)
	}
	if err := prof.save(ctx, "heap?gc=1", "abandoned-heap.pprof", 0); err != nil {
		t.Fatal(err)
	}
	subs, err := heldSubscriptions(ctx, hc, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if want := n * abandonedSubscriptions; subs < want {
		t.Fatalf("the example holds %d subscriptions after the clients vanished, want at least %d: "+
			"the sessions ended, so the figure measures nothing", subs, want)
	}

	held := func(m memory) int64 { return m.heapInuse + m.stackInuse }
	perSession := (held(gone) - held(base)) / int64(n)
	fmt.Printf("e2e/load: abandoned sessions=%d subscriptions=%d held +%.1fMB (%.1fKB a session; %.1fKB while connected): "+
		"heap in use +%.1fMB (live +%.1fMB) stacks +%.1fMB; rss +%.1fMB (+%.1fMB while connected); goroutines +%d (+%d while connected) profile=%s\n",
		n, subs, mb(held(gone)-held(base)), kb(perSession), kb((held(open)-held(base))/int64(n)),
		mb(gone.heapInuse-base.heapInuse), mb(gone.heapAlloc-base.heapAlloc), mb(gone.stackInuse-base.stackInuse),
		mb(gone.rss-base.rss), mb(open.rss-base.rss), gone.goroutines-base.goroutines, open.goroutines-base.goroutines,
		filepath.Join(dir, "abandoned-heap.pprof"))
	if !raceEnabled && perSession > maxAbandonedBytes {
		t.Errorf("an abandoned session adds %.1f KB to the heap in use and the stacks, want at most %.0f KB", kb(perSession), kb(maxAbandonedBytes))
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
func kb(n int64) float64 { return float64(n) / (1 << 10) }

// An abandonedSession is one client's legacy session, with its GET stream.
type abandonedSession struct {
	id     string
	stream io.ReadCloser
}

// openAbandoned opens session i: initialize, notifications/initialized, a
// GET stream answered 200, then resources/subscribe of
// abandonedSubscriptions customers, a window that starts at i.
func openAbandoned(ctx context.Context, hc *http.Client, endpoint string, i int) (*abandonedSession, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, body, err := post(ctx, hc, endpoint, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+
		legacyVersion+`","capabilities":{},"clientInfo":{"name":"abandoned","version":"0"}}}`)
	if err != nil {
		return nil, err
	}
	s := &abandonedSession{id: res.Header.Get("Mcp-Session-Id")}
	if res.StatusCode != http.StatusOK || s.id == "" {
		return nil, fmt.Errorf("initialize: %s, session %q: %.200s", res.Status, s.id, body)
	}
	if res, body, err = post(ctx, hc, endpoint, s.id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	} else if res.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("notifications/initialized: %s: %.200s", res.Status, body)
	}
	if err := s.openStream(hc, endpoint); err != nil {
		return nil, err
	}
	for k := range abandonedSubscriptions {
		uri := loadkit.ShowURI(int64((i*7+k)%loadkit.CustomerCount + 1))
		res, body, err := post(ctx, hc, endpoint, s.id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, k+2, uri))
		if err != nil {
			s.close()
			return nil, err
		}
		if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"result"`)) {
			s.close()
			return nil, fmt.Errorf("subscribe %s: %s: %.200s", uri, res.Status, body)
		}
	}
	return s, nil
}

// openStream opens the session's GET stream, and returns once it is
// answered; it stays open, with its connection, until close.
func (s *abandonedSession) openStream(hc *http.Client, endpoint string) error {
	req, err := http.NewRequest(http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("MCP-Protocol-Version", legacyVersion)
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET stream: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		res.Body.Close()
		return fmt.Errorf("GET stream: %s: %.200s", res.Status, body)
	}
	s.stream = res.Body
	return nil
}

// close drops the session's connection as a vanished client's is dropped.
func (s *abandonedSession) close() {
	if s.stream != nil {
		s.stream.Close()
	}
}

// delete ends the session, as a client that leaves properly does.
func (s *abandonedSession) delete(ctx context.Context, hc *http.Client, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("MCP-Protocol-Version", legacyVersion)
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("DELETE: %s", res.Status)
	}
	return nil
}

// post sends one JSON-RPC message on session ("" for none) and returns the
// response with its body, read whole.
func post(ctx context.Context, hc *http.Client, endpoint, session, msg string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(msg))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", legacyVersion)
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res, body, err
}

// memory is what the example holds at one moment.
type memory struct {
	heapInuse  int64 // runtime.MemStats.HeapInuse, after a collection
	heapAlloc  int64 // runtime.MemStats.HeapAlloc: the live objects' bytes
	stackInuse int64 // runtime.MemStats.StackInuse: the goroutines' stacks
	rss        int64 // VmRSS
	goroutines int64
}

// measureMemory collects the example's garbage and reads its heap in use,
// its resident memory and its goroutines.
func measureMemory(ctx context.Context, prof *profiler, proc *exampleproc.Process) (memory, error) {
	var m memory
	heap, err := prof.get(ctx, "heap?gc=1&debug=1")
	if err != nil {
		return m, err
	}
	for _, stat := range []struct {
		name string
		v    *int64
	}{{"HeapInuse", &m.heapInuse}, {"HeapAlloc", &m.heapAlloc}, {"Stack", &m.stackInuse}} {
		if *stat.v, err = memStat(heap, stat.name); err != nil {
			return m, err
		}
	}
	goroutines, err := prof.get(ctx, "goroutine?debug=1")
	if err != nil {
		return m, err
	}
	first, _, _ := strings.Cut(string(goroutines), "\n")
	total, ok := strings.CutPrefix(first, "goroutine profile: total ")
	if m.goroutines, err = strconv.ParseInt(total, 10, 64); !ok || err != nil {
		return m, fmt.Errorf("goroutine profile begins %.100q, not with its total", first)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", proc.Pid()))
	if err != nil {
		return m, err
	}
	m.rss, err = statusKB(string(status), "VmRSS")
	return m, err
}

// settledMemory measures the example once its goroutines have stopped
// changing in number for a second: the connections the clients dropped
// are closed, and their requests have returned.
func settledMemory(ctx context.Context, prof *profiler, proc *exampleproc.Process) (memory, error) {
	last, err := measureMemory(ctx, prof, proc)
	for err == nil {
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("the example's goroutines did not settle: %d at the deadline", last.goroutines)
		case <-time.After(time.Second):
		}
		var m memory
		if m, err = measureMemory(ctx, prof, proc); err == nil && m.goroutines == last.goroutines {
			return m, nil
		}
		last = m
	}
	return last, err
}

// memStat reads "# name = N" from a heap profile in its text form
// (debug=1), where runtime.MemStats is printed ("# Stack = N / M": the
// first).
func memStat(profile []byte, name string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(profile))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# "+name+" = "); ok {
			v, _, _ = strings.Cut(v, " /")
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("the heap profile has no %s", name)
}

// statusKB reads a size in kB from /proc/PID/status, in bytes.
func statusKB(status, name string) (int64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		kbs, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseInt(strings.TrimSpace(kbs), 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("/proc/PID/status: %s %q is not a size in kB", name, strings.TrimSpace(rest))
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("/proc/PID/status has no %s", name)
}

// heldSubscriptions reads mcplive_subscriptions from the example's /metrics.
func heldSubscriptions(ctx context.Context, hc *http.Client, endpoint string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/mcp")+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mcplive_subscriptions "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int(f), err
		}
	}
	return 0, errors.Join(errors.New("/metrics has no mcplive_subscriptions"), sc.Err())
}

// get fetches profile (a path under /debug/pprof/, with its query).
func (pr *profiler) get(ctx context.Context, profile string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pr.url+profile, nil)
	if err != nil {
		return nil, err
	}
	res, err := pr.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", profile, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("profile %s: %s %.200s %v", profile, res.Status, body, err)
	}
	return body, nil
}
