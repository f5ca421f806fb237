package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPprofFlag(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6060", "localhost:0", "[::1]:6060"} {
		if cfg, err := parseFlags([]string{"-pprof", addr}, io.Discard); err != nil || cfg.pprof != addr {
			t.Errorf("-pprof %s: %+v, %v; want it accepted", addr, cfg, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "example.com:6060", "6060"} {
		var out strings.Builder
		if _, err := parseFlags([]string{"-pprof", addr}, &out); err == nil || !strings.Contains(out.String(), `"`+addr+`"`) {
			t.Errorf("-pprof %s: %v, said %q; want an error naming it", addr, err, out.String())
		}
	}
}

// servedURL is a slog.Handler that sends the url of the profiler's
// "serving" record.
type servedURL chan string

func (s servedURL) Enabled(context.Context, slog.Level) bool { return true }
func (s servedURL) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s servedURL) WithGroup(string) slog.Handler            { return s }
func (s servedURL) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == "serving the profiler" {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "url" {
				s <- a.Value.String()
			}
			return true
		})
	}
	return nil
}

// TestPprof runs the example with -pprof: the profiler answers on its own
// loopback listener, refuses other Host names and profiles longer than
// its write timeout, and stops with the example.
func TestPprof(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	urls := make(servedURL, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{addr: "127.0.0.1:0", pprof: "127.0.0.1:0"}, nil, io.Discard, slog.New(urls))
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("run returned before serving the profiler: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the profiler did not say where it serves within 10s")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/debug/pprof/") {
		t.Fatalf("the profiler serves at %q, want http://127.0.0.1:PORT/debug/pprof/", url)
	}

	get := func(path, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("heap?debug=1", ""); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("GET heap: %d %.200q, want 200 and a heap profile", code, body)
	}
	if code, body := get("goroutine?debug=1", ""); code != http.StatusOK || !strings.Contains(body, "servePprof") {
		t.Errorf("GET goroutine: %d %.200q, want 200 and the profiler's own goroutine", code, body)
	}
	if code, _ := get("heap", "attacker.example"); code != http.StatusForbidden {
		t.Errorf("GET heap with Host attacker.example: %d, want 403", code)
	}
	for _, path := range []string{"profile", "trace"} {
		tooLong := strconv.Itoa(pprofMaxSeconds + 1)
		if code, body := get(path+"?seconds="+tooLong, ""); code != http.StatusBadRequest || !strings.Contains(body, tooLong+" s") {
			t.Errorf("GET a %s of %s s: %d %.200q, want 400 naming its length", path, tooLong, code, body)
		}
	}
	if code, body := get("profile?seconds=1", ""); code != http.StatusOK || !strings.HasPrefix(body, "\x1f\x8b") {
		t.Errorf("GET a profile of 1 s: %d %.20q, want 200 and a gzipped profile", code, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(shutdownGrace + 5*time.Second):
		t.Fatal("run did not return after its context ended")
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("the profiler still answers after the example stopped")
	}
}
