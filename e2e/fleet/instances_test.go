package fleet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
)

// The test asks the instances themselves, past the balancer, what the
// balancer did: which instance holds each legacy session, and how many
// subscriptions each holds.

// sessionHome returns the index of the one instance that knows session:
// a ping carrying its ID answers 200 there and 404 (unknown session) on
// every other instance.
func sessionHome(ctx context.Context, insts []*exampleproc.Process, session string) (int, error) {
	home := -1
	for i, inst := range insts {
		status, err := ping(ctx, inst.URL, session)
		if err != nil {
			return -1, err
		}
		switch status {
		case http.StatusOK:
			if home >= 0 {
				return -1, fmt.Errorf("session %s lives on instances %d and %d", session, home, i)
			}
			home = i
		case http.StatusNotFound:
		default:
			return -1, fmt.Errorf("ping of session %s on instance %d: status %d", session, i, status)
		}
	}
	if home < 0 {
		return -1, fmt.Errorf("no instance knows session %s", session)
	}
	return home, nil
}

// ping sends a 2025-11-25 ping on session to the MCP endpoint url and
// returns the status.
func ping(ctx context.Context, url, session string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", legacyEra)
	resp, err := directClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("ping %s: %w", url, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// directClient talks to the instances past the balancer, from 127.0.0.1;
// TestFleet closes its idle connections when it ends.
var (
	directTransport = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: idleConnTimeout}
	directClient    = &http.Client{Transport: directTransport}
)

// instanceMetrics are what an instance's /metrics says of its subscriptions.
type instanceMetrics struct {
	subscriptions int // held now (mcplive_subscriptions)
	refused       int // refused since it started (mcplive_refused_subscriptions_total)
}

// scrape reads the metrics of the instance whose MCP endpoint is url.
func scrape(ctx context.Context, url string) (instanceMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	metricsURL := strings.TrimSuffix(url, "/mcp") + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return instanceMetrics{}, err
	}
	resp, err := directClient.Do(req)
	if err != nil {
		return instanceMetrics{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return instanceMetrics{}, fmt.Errorf("GET %s: status %d", metricsURL, resp.StatusCode)
	}
	var m instanceMetrics
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := sample(sc.Text(), "mcplive_subscriptions"); ok {
			m.subscriptions, found = v, true
		}
		if v, ok := sample(sc.Text(), "mcplive_refused_subscriptions_total"); ok {
			m.refused = v // absent until the first refusal
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("GET %s: %w", metricsURL, err)
	}
	if !found {
		return m, fmt.Errorf("GET %s: no mcplive_subscriptions", metricsURL)
	}
	return m, nil
}

// sample parses a Prometheus text line of the metric name, with or
// without labels, whose value is an integer.
func sample(line, name string) (int, bool) {
	rest, ok := strings.CutPrefix(line, name)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
		return 0, false
	}
	fields := strings.Fields(rest)
	f, err := strconv.ParseFloat(fields[len(fields)-1], 64)
	if err != nil {
		return 0, false
	}
	return int(f), true
}
