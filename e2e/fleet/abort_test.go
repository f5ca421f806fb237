package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// releaseBound is how soon after its client closes a listen stream the
// instance behind the balancer must have ended its subscriptions. Without
// `option abortonclose` HAProxy keeps the server side open until a write
// to the client fails, the next keep-alive (15 s) or the one after: the
// instance held the subscriptions, and the client's place under its cap,
// for 15 to 30 s.
const releaseBound = 5 * time.Second

// TestBalancerReleasesAClosedListen: through the shipped configuration, a
// 2026-07-28 client that closes its subscriptions/listen stream, with a
// FIN as a client that ends does or with a reset as a crashed one, frees
// its subscriptions on the instance within releaseBound, so that a client
// that listens again at once is not held at its cap by its own past.
func TestBalancerReleasesAClosedListen(t *testing.T) {
	bin := haproxyBinary(t)
	inst := example.Start(t, "-trusted-proxy", "127.0.0.1")
	// The configuration has three servers; all three are this instance.
	lb := startBalancer(t, bin, []string{inst.Addr(), inst.Addr(), inst.Addr()})
	metrics := "http://" + inst.Addr() + "/metrics"
	uris := make([]string, 20)
	for i := range uris {
		uris[i] = loadkit.ShowURI(int64(i + 1))
	}
	for _, reset := range []bool{false, true} {
		name := map[bool]string{false: "closed", true: "reset"}[reset]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			before, err := heldSubscriptions(ctx, metrics)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := listenThrough(ctx, lb.URL, uris)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := heldSubscriptions(ctx, metrics); err != nil || n != before+len(uris) {
				conn.Close()
				t.Fatalf("the instance holds %d subscriptions (%v), want %d and the listen's %d", n, err, before, len(uris))
			}
			if reset {
				conn.(*net.TCPConn).SetLinger(0) // Close sends RST
			}
			closed := time.Now()
			conn.Close()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				n, err := heldSubscriptions(ctx, metrics)
				if err != nil {
					t.Fatal(err)
				}
				if n == before {
					t.Logf("%s: the instance let go of the listen's subscriptions %v after its client went", name, time.Since(closed).Round(time.Millisecond))
					break
				}
				if time.Since(closed) > releaseBound {
					t.Fatalf("%s: the instance still holds %d of the listen's subscriptions %v after the client went, want none within %v (option abortonclose)",
						name, n-before, time.Since(closed).Round(time.Millisecond), releaseBound)
				}
				select {
				case <-tick.C:
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				}
			}
		})
	}
}

// listenThrough opens a subscriptions/listen of uris through the balancer
// at url on a connection of its own, reads the response up to the
// acknowledgement, and returns the connection, still open.
func listenThrough(ctx context.Context, url string, uris []string) (net.Conn, error) {
	params, _ := json.Marshal(map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": uris},
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "abort", "version": "0"},
		},
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":` + string(params) + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MethodSubscriptionsListen, params) {
		req.Header.Set(k, v)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", req.URL.Host)
	if err != nil {
		return nil, err
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	conn.SetReadDeadline(deadline)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("listen through the balancer: %s", res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), mcp.MethodNotificationSubscriptionsAcknowledged) {
			return conn, nil
		}
	}
	conn.Close()
	return nil, fmt.Errorf("the listen stream ended before its acknowledgement: %v", sc.Err())
}

// heldSubscriptions reads mcplive_subscriptions from an instance's
// /metrics, on a connection of its own.
func heldSubscriptions(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	rt := &http.Transport{DisableKeepAlives: true}
	defer rt.CloseIdleConnections()
	res, err := rt.RoundTrip(req)
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
	return 0, fmt.Errorf("%s has no mcplive_subscriptions", url)
}
