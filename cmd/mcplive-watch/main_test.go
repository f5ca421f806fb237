package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/internal/leakcheck"
)

// helperEnv, when set, makes the test binary a stdio MCP server (see
// TestMain) for the tests of -stdio: "serve", or "exit" for one that ends
// at once with status 3.
const helperEnv = "MCPLIVE_WATCH_TEST_SERVER"

// TestMain fails the tests if a goroutine outlives them: the tool ends
// everything it started (listen request, GET stream, re-reads, the stdio
// server) before run returns.
func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "serve":
		os.Exit(serveStdioHelper())
	case "exit":
		fmt.Fprintln(os.Stderr, "the helper server gives up")
		os.Exit(3)
	}
	leakcheck.VerifyTestMain(m)
}

// wait bounds every wait of these tests for the tool or the server.
const wait = 30 * time.Second

// shop is the server the tool watches: one live command reading a customer
// from a map, and a write that renames one and says so.
type shop struct {
	a     *adapter.Adapter
	mu    sync.Mutex
	names map[int64]string
}

type showArgs struct {
	ID int64 `json:"id"`
}

type customer struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func newShop() *shop {
	s := &shop{names: map[int64]string{1: "Ada Lovelace", 2: "Kurt Gödel"}}
	s.a = adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))
	adapter.Live(s.a, "customers_show", "One customer.",
		func(ctx context.Context, args showArgs) (customer, error) {
			adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
			s.mu.Lock()
			defer s.mu.Unlock()
			name, ok := s.names[args.ID]
			if !ok {
				return customer{}, adapter.ErrNotFound
			}
			return customer{ID: args.ID, Name: name}, nil
		})
	return s
}

// rename is a write: it changes the data, then tells the adapter.
func (s *shop) rename(id int64, name string) {
	s.mu.Lock()
	s.names[id] = name
	s.mu.Unlock()
	s.a.Changed(fmt.Sprintf("customers/%d", id))
}

// serveHTTP serves s over real HTTP on loopback, through the adapter's
// edge, until the test ends; wrap, if not nil, wraps the handler.
func (s *shop) serveHTTP(t *testing.T, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	h := s.a.HTTPHandler(server.NewStreamableHTTPServer(s.a.Server()))
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := s.a.Close(ctx); err != nil {
			t.Errorf("close the adapter: %v", err)
		}
	})
	return hs
}

// output is a writer the tool writes to and the test waits on.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	select {
	case o.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output matches re, and returns the match.
func (o *output) waitFor(t *testing.T, re *regexp.Regexp, what string) []string {
	t.Helper()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		if m := re.FindStringSubmatch(o.String()); m != nil {
			return m
		}
		select {
		case <-o.changed:
		case <-timeout.C:
			t.Fatalf("no %s within %v; the tool wrote:\n%s", what, wait, o)
		}
	}
}

// running is the tool, run in the test's process.
type running struct {
	stdout, stderr *output
	code           chan int
	stop           context.CancelFunc // Ctrl-C
}

// start runs the tool with args until it exits or the test ends.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	r := &running{stdout: newOutput(), stderr: newOutput(), code: make(chan int, 1), stop: stop}
	go func() { r.code <- run(ctx, args, r.stdout, r.stderr) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-r.code:
		case <-time.After(wait):
			t.Errorf("the tool did not end within %v of Ctrl-C", wait)
		}
	})
	return r
}

// exit waits for the tool's exit status.
func (r *running) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.code:
		r.code <- code // for the cleanup
		return code
	case <-time.After(wait):
		t.Fatalf("the tool did not exit within %v\nstdout:\n%s\nstderr:\n%s", wait, r.stdout, r.stderr)
		return 0
	}
}

var (
	watchingLine = regexp.MustCompile(`mcplive-watch: watching (\d+) URIs? on .+ \(protocol (\S+), ([^)]+)\); Ctrl-C stops\n`)
	updatedLine  = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) updated (\S+)$`)
)

// TestWatchHTTP watches over real HTTP on each protocol version: the tool
// subscribes, a write renames customer 1, and the tool prints the
// notification with its time and the diff of the re-read, then exits at
// -count 1. Customer 2, watched too, is not written and not notified.
func TestWatchHTTP(t *testing.T) {
	for _, tc := range []struct{ protocol, want, how string }{
		{protocolAuto, protocolListen, "subscriptions/listen"},
		{protocolListen, protocolListen, "subscriptions/listen"},
		{protocolLegacy, protocolLegacy, "resources/subscribe on the GET stream"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			s := newShop()
			hs := s.serveHTTP(t, nil)
			r := start(t, "-protocol", tc.protocol, "-diff", "-count", "1", hs.URL, "app://customers_show/2", "app://customers_show/1")
			m := r.stderr.waitFor(t, watchingLine, "line saying it watches")
			if m[1] != "2" || m[2] != tc.want || m[3] != tc.how {
				t.Errorf("it says %q, want 2 URIs on protocol %s with %s", m[0], tc.want, tc.how)
			}
			s.rename(1, "Ada King")
			if code := r.exit(t); code != exitOK {
				t.Fatalf("exit status %d after -count 1, want 0\nstderr:\n%s", code, r.stderr)
			}
			checkOneUpdate(t, r.stdout.String(), "app://customers_show/1")
		})
	}
}

// checkOneUpdate checks what -diff -count 1 printed: the first reads of
// every URI, then one notification for uri and the diff of its re-read.
func checkOneUpdate(t *testing.T, out, uri string) {
	t.Helper()
	updates := updatedLine.FindAllStringSubmatch(out, -1)
	if len(updates) != 1 || updates[0][2] != uri {
		t.Fatalf("notifications printed: %q, want one for %s; stdout:\n%s", updates, uri, out)
	}
	_, after, _ := strings.Cut(out, updates[0][0])
	want := "read " + uri + "\n" +
		`  -   "name": "Ada Lovelace"` + "\n" +
		`  +   "name": "Ada King"` + "\n"
	if !strings.Contains(after, want) {
		t.Errorf("after the notification it printed:\n%s\nwant the re-read's diff:\n%s", after, want)
	}
	if !strings.Contains(out, "read app://customers_show/2\n  {\n    \"id\": 2,\n    \"name\": \"Kurt Gödel\"\n  }\n") {
		t.Errorf("stdout does not show the first read of customer 2, indented:\n%s", out)
	}
}

// TestWatchFallsBackToLegacy runs the default, -protocol auto, against a
// server that speaks only 2025-11-25 (it answers server/discover as an
// older server does, with method not found): the tool subscribes with
// resources/subscribe on the GET stream, and hears the write.
func TestWatchFallsBackToLegacy(t *testing.T) {
	s := newShop()
	hs := s.serveHTTP(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Method") == string(mcp.MethodServerDiscover) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	r := start(t, "-read", "-count", "1", hs.URL, "app://customers_show/1")
	if m := r.stderr.waitFor(t, watchingLine, "line saying it watches"); m[2] != protocolLegacy {
		t.Fatalf("it says %q, want protocol %s", m[0], protocolLegacy)
	}
	s.rename(1, "Ada King")
	if code := r.exit(t); code != exitOK {
		t.Fatalf("exit status %d, want 0\nstderr:\n%s", code, r.stderr)
	}
	out := r.stdout.String()
	if updates := updatedLine.FindAllString(out, -1); len(updates) != 1 || !strings.Contains(out, `"name": "Ada King"`) {
		t.Errorf("stdout:\n%s\nwant one notification and the re-read result with Ada King", out)
	}
}

// TestWatchSendsHeaders watches a server that answers 401 to any request
// without the -header headers, on each protocol version: every request
// (the POSTs, the GET stream of 2025-11-25, the DELETE that ends its
// session) carries them, a repeated one with each of its values, and the
// watch hears the write.
func TestWatchSendsHeaders(t *testing.T) {
	for _, protocol := range []string{protocolListen, protocolLegacy} {
		t.Run(protocol, func(t *testing.T) {
			var (
				mu      sync.Mutex
				methods = map[string]int{}
			)
			s := newShop()
			hs := s.serveHTTP(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if got := r.Header.Values("Authorization"); !slices.Equal(got, []string{"Bearer t0ken"}) {
						t.Errorf("%s with Authorization %q", r.Method, got)
						http.Error(w, "no token", http.StatusUnauthorized)
						return
					}
					if got := r.Header.Values("X-Tenant"); !slices.Equal(got, []string{"a", "b"}) {
						t.Errorf("%s with X-Tenant %q", r.Method, got)
					}
					mu.Lock()
					methods[r.Method]++
					mu.Unlock()
					next.ServeHTTP(w, r)
				})
			})
			r := start(t, "-protocol", protocol, "-diff", "-count", "1", "-header", "Authorization: Bearer t0ken",
				"-header", "X-Tenant: a", "-header", "X-Tenant: b", hs.URL, "app://customers_show/2", "app://customers_show/1")
			r.stderr.waitFor(t, watchingLine, "line saying it watches")
			s.rename(1, "Ada King")
			if code := r.exit(t); code != exitOK {
				t.Fatalf("exit status %d, want 0\nstderr:\n%s", code, r.stderr)
			}
			checkOneUpdate(t, r.stdout.String(), "app://customers_show/1")
			mu.Lock()
			defer mu.Unlock()
			if methods["POST"] == 0 || protocol == protocolLegacy && (methods["GET"] == 0 || methods["DELETE"] == 0) {
				t.Errorf("requests that reached the server, by method: %v; want POSTs, and on %s the GET stream and the DELETE", methods, protocolLegacy)
			}
		})
	}
}

// TestWatchCtrlC ends a watch that heard nothing: exit status 0, and
// nothing of it left running (TestMain checks the goroutines).
func TestWatchCtrlC(t *testing.T) {
	for _, protocol := range []string{protocolListen, protocolLegacy} {
		t.Run(protocol, func(t *testing.T) {
			hs := newShop().serveHTTP(t, nil)
			r := start(t, "-protocol", protocol, "-read", hs.URL, "app://customers_show/1")
			r.stderr.waitFor(t, watchingLine, "line saying it watches")
			r.stop()
			if code := r.exit(t); code != exitOK {
				t.Errorf("exit status %d after Ctrl-C, want 0\nstderr:\n%s", code, r.stderr)
			}
			if updatedLine.MatchString(r.stdout.String()) {
				t.Errorf("a notification without a write:\n%s", r.stdout)
			}
		})
	}
}

// TestWatchRefusedURIs: a URI the server does not take fails the watch on
// either protocol version, naming the URI and what the server says of it.
func TestWatchRefusedURIs(t *testing.T) {
	for _, tc := range []struct{ protocol, want string }{
		{protocolListen, "the server did not acknowledge 1 URI:\n  app://customers_show/one (a read of it answers: invalid params: invalid arguments: id: must be an integer)"},
		{protocolLegacy, "the server refused resources/subscribe of 1 URI:\n  app://customers_show/one: invalid params: invalid arguments: id: must be an integer"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			hs := newShop().serveHTTP(t, nil)
			r := start(t, "-protocol", tc.protocol, hs.URL, "app://customers_show/1", "app://customers_show/one")
			if code := r.exit(t); code != exitFail {
				t.Fatalf("exit status %d, want 1", code)
			}
			if got := r.stderr.String(); !strings.Contains(got, tc.want) {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestWatchServerWithoutSubscriptions: a server that does not offer
// resources.subscribe is told apart from one that failed.
func TestWatchServerWithoutSubscriptions(t *testing.T) {
	srv := server.NewMCPServer("plain", "1.0.0", server.WithResourceCapabilities(false, false))
	srv.AddResource(mcp.NewResource("app://readme", "readme"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "app://readme", Text: "hello"}}, nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	for _, protocol := range []string{protocolListen, protocolLegacy} {
		r := start(t, "-protocol", protocol, hs.URL, "app://readme")
		if code := r.exit(t); code != exitFail {
			t.Fatalf("-protocol %s: exit status %d, want 1", protocol, code)
		}
		want := "does not offer resource subscriptions: its capabilities (protocol " + protocol + ") lack resources.subscribe"
		if got := r.stderr.String(); !strings.Contains(got, want) {
			t.Errorf("-protocol %s: stderr %q, want it to say %q", protocol, got, want)
		}
	}
}

// TestWatchUnreachable: nothing listens at the URL.
func TestWatchUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	r := start(t, url, "app://customers_show/1")
	if code := r.exit(t); code != exitFail {
		t.Fatalf("exit status %d, want 1", code)
	}
	if got := r.stderr.String(); !strings.Contains(got, "connect to "+url) || !strings.Contains(got, "refused") {
		t.Errorf("stderr %q, want it to say it could not connect to %s, refused", got, url)
	}
}

// TestWatchServerGoesAway: when the server ends the subscription (it shuts
// down), the tool says so and fails, rather than wait for ever for
// notifications that cannot come.
func TestWatchServerGoesAway(t *testing.T) {
	for _, tc := range []struct{ protocol, want string }{
		{protocolListen, "ended the subscriptions/listen request: the subscriptions ended with it"},
		{protocolLegacy, "ended and did not open again within 1s (-timeout)"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			s := newShop()
			hs := s.serveHTTP(t, nil)
			r := start(t, "-protocol", tc.protocol, "-timeout", "1s", hs.URL, "app://customers_show/1")
			r.stderr.waitFor(t, watchingLine, "line saying it watches")
			// The adapter's Close ends the listen requests with their
			// result; closing the connections ends the GET stream, and
			// closing the server keeps mcp-go's client from opening it
			// again.
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := s.a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			hs.CloseClientConnections()
			hs.Close()
			if code := r.exit(t); code != exitFail {
				t.Fatalf("exit status %d, want 1\nstderr:\n%s", code, r.stderr)
			}
			if got := r.stderr.String(); !strings.Contains(got, tc.want) {
				t.Errorf("stderr:\n%s\nwant it to say %q", got, tc.want)
			}
		})
	}
}

// TestWatchStdio starts a stdio server (this test binary, as the helper of
// TestMain) with -stdio, on each protocol version. The helper renames
// customer 1 when asked over a loopback HTTP endpoint it prints on its
// stderr, which the tool passes through.
func TestWatchStdio(t *testing.T) {
	t.Setenv(helperEnv, "serve")
	for _, tc := range []struct{ protocol, want, how string }{
		{protocolAuto, protocolListen, "subscriptions/listen"},
		{protocolLegacy, protocolLegacy, "resources/subscribe"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			r := start(t, "-protocol", tc.protocol, "-diff", "-count", "1", "-stdio", os.Args[0]+" -test.run=^$",
				"app://customers_show/2", "app://customers_show/1")
			m := r.stderr.waitFor(t, watchingLine, "line saying it watches")
			if m[2] != tc.want || m[3] != tc.how {
				t.Errorf("it says %q, want protocol %s with %s", m[0], tc.want, tc.how)
			}
			endpoint := r.stderr.waitFor(t, regexp.MustCompile(`helper: renames at (http://127\.0\.0\.1:\d+/rename)\n`), "helper's endpoint")[1]
			resp, err := http.Post(endpoint, "text/plain", strings.NewReader("Ada King"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if code := r.exit(t); code != exitOK {
				t.Fatalf("exit status %d, want 0\nstderr:\n%s", code, r.stderr)
			}
			checkOneUpdate(t, r.stdout.String(), "app://customers_show/1")
		})
	}
}

// TestWatchStdioServerExits: a server that exits before it answers is
// reported with its exit status, and one that cannot start with why.
func TestWatchStdioServerExits(t *testing.T) {
	t.Setenv(helperEnv, "exit")
	r := start(t, "-stdio", os.Args[0]+" -test.run=^$", "app://customers_show/1")
	if code := r.exit(t); code != exitFail {
		t.Fatalf("exit status %d, want 1", code)
	}
	if got := r.stderr.String(); !strings.Contains(got, "the helper server gives up") || !strings.Contains(got, "exited: exit status 3") {
		t.Errorf("stderr %q, want the server's own stderr and its exit status", got)
	}

	r = start(t, "-stdio", "./no-such-server --stdio", "app://customers_show/1")
	if code := r.exit(t); code != exitFail {
		t.Fatalf("exit status %d, want 1", code)
	}
	if got := r.stderr.String(); !strings.Contains(got, `start the server "./no-such-server --stdio"`) {
		t.Errorf("stderr %q, want it to say it could not start the server", got)
	}
}

// serveStdioHelper is the stdio server of TestWatchStdio: the shop on
// stdin and stdout, and a loopback endpoint that renames customer 1.
func serveStdioHelper() int {
	s := newShop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _ := io.ReadAll(r.Body)
		s.rename(1, string(name))
	}))
	fmt.Fprintf(os.Stderr, "helper: renames at http://%s/rename\n", ln.Addr())
	if err := s.a.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 0
}

// TestParseArgs checks the command line: flags anywhere, and each mistake
// named.
func TestParseArgs(t *testing.T) {
	cfg, err := parseArgs([]string{"http://127.0.0.1:8080/mcp", "-diff", "app://a/1", "-count", "2", "app://b?x=1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.endpoint != "http://127.0.0.1:8080/mcp" || !cfg.diff || cfg.count != 2 || strings.Join(cfg.uris, " ") != "app://a/1 app://b?x=1" ||
		cfg.protocol != protocolAuto || cfg.timeout != defaultTimeout {
		t.Errorf("parsed %+v", cfg)
	}
	cfg, err = parseArgs([]string{"-stdio", "go run ./examples/customers -stdio", "app://a/1"}, io.Discard)
	if err != nil || strings.Join(cfg.command, "|") != "go|run|./examples/customers|-stdio" || cfg.endpoint != "" {
		t.Errorf("-stdio: parsed %+v, %v", cfg, err)
	}

	cfg, err = parseArgs([]string{"-header", "authorization:  Bearer demo-ada ", "-header", "X-Trace: a", "-header", "x-trace:b", "http://h/mcp", "app://a/1"}, io.Discard)
	if want := (http.Header{"Authorization": {"Bearer demo-ada"}, "X-Trace": {"a", "b"}}); err != nil || !reflect.DeepEqual(cfg.headers, want) {
		t.Errorf("-header: parsed %v, %v; want %v", cfg.headers, err, want)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no URL"},
		{[]string{"http://127.0.0.1:8080/mcp"}, "no URI to watch"},
		{[]string{"localhost:8080", "app://a/1"}, `bad URL "localhost:8080": want an http:// or https:// URL`},
		{[]string{"http:///mcp", "app://a/1"}, "names no host"},
		{[]string{"http://h/mcp", "customers_show/1"}, `bad URI "customers_show/1": want an absolute resource URI`},
		{[]string{"http://h/mcp", "app://a/1", "app://a/1"}, "the URI app://a/1 is given twice"},
		{[]string{"-protocol", "2024-11-05", "http://h/mcp", "app://a/1"}, `-protocol "2024-11-05": want auto, 2026-07-28 or 2025-11-25`},
		{[]string{"-read", "-diff", "http://h/mcp", "app://a/1"}, "-read and -diff: choose one"},
		{[]string{"-count", "-1", "http://h/mcp", "app://a/1"}, "-count -1"},
		{[]string{"-timeout", "0s", "http://h/mcp", "app://a/1"}, "-timeout 0s"},
		{[]string{"-stdio", " ", "app://a/1"}, "-stdio: no command"},
		{[]string{"-nope", "http://h/mcp", "app://a/1"}, "flag provided but not defined: -nope"},
		{[]string{"-header", "Authorization Bearer x", "http://h/mcp", "app://a/1"}, `"Authorization Bearer x": want Name: value`},
		{[]string{"-header", "Bad Name: x", "http://h/mcp", "app://a/1"}, `the name "Bad Name" is not a header name`},
		{[]string{"-header", ": x", "http://h/mcp", "app://a/1"}, `the name "" is not a header name`},
		{[]string{"-header", "X-A: b\r\nX-B: c", "http://h/mcp", "app://a/1"}, "the value holds a control character"},
		{[]string{"-header", "mcp-session-id: 1", "http://h/mcp", "app://a/1"}, "the MCP client sets Mcp-Session-Id itself"},
		{[]string{"-header", "X-A: b", "-stdio", "server", "app://a/1"}, "-header with -stdio"},
	} {
		var errOut bytes.Buffer
		if _, err := parseArgs(tc.args, &errOut); err == nil || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("parseArgs(%q): %v, said %q; want it to say %q", tc.args, err, errOut.String(), tc.want)
		}
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"http://h/mcp"}, io.Discard, &stderr); code != exitUsage {
		t.Errorf("a bad command line: exit status %d, want %d", code, exitUsage)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"-h"}, io.Discard, &stderr); code != exitOK || !strings.Contains(stderr.String(), "usage: mcplive-watch [flags] URL URI...") {
		t.Errorf("-h: exit status %d, said %q", code, stderr.String())
	}
}

func TestDiffLines(t *testing.T) {
	for _, tc := range []struct {
		old, new string
		want     []string
	}{
		{"a\nb\nc", "a\nB\nc", []string{"- b", "+ B"}},
		{"a\nb", "a\nb\nc", []string{"+ c"}},
		{"a\nb\nc", "a\nc", []string{"- b"}},
		{"x", "x", nil},
		{"a\nb", "c\nd", []string{"- a", "- b", "+ c", "+ d"}},
	} {
		if got := diffLines(tc.old, tc.new); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("diffLines(%q, %q) = %q, want %q", tc.old, tc.new, got, tc.want)
		}
	}
}
