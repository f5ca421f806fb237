package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplive/adapter/middleware"
)

// writeCommands names exactly the commands that are not live.
func TestWriteCommandsAreTheWrites(t *testing.T) {
	var writes []string
	for _, c := range newAdapter(newTestStore(t), quietLogger()).Inspect().Commands {
		if !c.Live {
			writes = append(writes, c.Name)
		}
	}
	if !slices.Equal(writes, slices.Sorted(slices.Values(writeCommands))) {
		t.Errorf("the commands that write are %q; writeCommands says %q", writes, writeCommands)
	}
}

// The gate lets n agents' reads run at once, the rest in the order they
// came, while writes and re-runs pass; a read whose context ends while it
// waits fails with the context's error.
func TestReadGate(t *testing.T) {
	const n = 2
	release := make(chan struct{})
	started := make(chan string, 16)
	h := readGate(n, "customers_update")(func(ctx context.Context, call *middleware.Call) (any, error) {
		started <- call.Command
		if call.Origin == middleware.Agent && call.Command != "customers_update" {
			<-release
		}
		return call.Command, nil
	})
	call := func(ctx context.Context, command string, origin middleware.Origin) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := h(ctx, &middleware.Call{Command: command, Origin: origin})
			done <- err
		}()
		return done
	}
	next := func() string {
		t.Helper()
		select {
		case c := <-started:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no call started within 10s")
			return ""
		}
	}
	none := func(why string) {
		t.Helper()
		select {
		case c := <-started:
			t.Fatalf("%s started while %s", c, why)
		case <-time.After(50 * time.Millisecond):
		}
	}

	var reads []<-chan error
	for i := range n {
		reads = append(reads, call(t.Context(), "read"+string(rune('a'+i)), middleware.Agent))
		next()
	}
	// The gate is full: the next reads wait, in order; writes, re-runs and
	// the application's own calls pass.
	waiting := call(t.Context(), "read-third", middleware.Agent)
	none("the gate was full")
	cancelled, cancel := context.WithCancel(t.Context())
	gaveUp := call(cancelled, "read-gives-up", middleware.Agent)
	fourth := call(t.Context(), "read-fourth", middleware.Agent)
	none("the gate was full")
	for _, pass := range []struct {
		command string
		origin  middleware.Origin
	}{{"customers_update", middleware.Agent}, {"customers_show", middleware.Live}, {"customers_show", middleware.App}} {
		if err := <-call(t.Context(), pass.command, pass.origin); err != nil {
			t.Fatal(err)
		}
		if got := next(); got != pass.command {
			t.Fatalf("started %s, want %s, which passes the gate", got, pass.command)
		}
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("a read whose context ended while it waited: %v, want context.Canceled", err)
	}
	none("no read had finished")

	release <- struct{}{} // one read ends: the first waiting starts
	if got := next(); got != "read-third" {
		t.Errorf("after a read ended, %s started; want read-third, the first to wait", got)
	}
	release <- struct{}{}
	if got := next(); got != "read-fourth" {
		t.Errorf("then %s started; want read-fourth", got)
	}
	close(release)
	for _, done := range append(reads, waiting, fourth) {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestGateSize(t *testing.T) {
	st := newTestStore(t) // in memory: one connection
	if got := gateSize(st.db); got != 2 {
		t.Errorf("gateSize of an in-memory store = %d, want 2", got)
	}
}

func TestJSONMethod(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://customers_show/1"}}`, "resources/read"},
		{`{"params":{"method":"x","a":[1,{"method":"y"}]},"method":"tools/call"}`, "tools/call"},
		{`  {"method" : "resources\/read"}`, "resources/read"},
		{`{"jsonrpc":"2.0","id":1,"params":{"uri":"app://customers_sh`, ""}, // cut before the method
		{`{"jsonrpc":"2.0","method":`, ""},
		{`[{"method":"resources/read"}]`, ""},
		{`{"method":7}`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := jsonMethod([]byte(tt.msg)); got != tt.want {
			t.Errorf("jsonMethod(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

// gateReads lets n reads at a time through, in the order they came, and
// any other request past them; the handler reads each body whole, however
// long, and a read whose client went away while it waited never reaches
// it.
func TestGateReads(t *testing.T) {
	release := make(chan struct{})
	got := make(chan string, 16)
	h := gateReads(1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got <- string(body)
		if jsonMethod(body) == "resources/read" {
			<-release
		}
	}))
	post := func(ctx context.Context, body string) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(body))
			h.ServeHTTP(httptest.NewRecorder(), r)
		}()
		return done
	}
	next := func() string {
		t.Helper()
		select {
		case b := <-got:
			return b
		case <-time.After(10 * time.Second):
			t.Fatal("no request reached the handler within 10s")
			return ""
		}
	}
	read := func(n int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"resources/read","params":{"uri":"app://customers_show/1"}}`
	}
	first := post(t.Context(), read(1))
	if b := next(); b != read(1) {
		t.Fatalf("the handler read %q, want the first read", b)
	}
	gone, leave := context.WithCancel(t.Context())
	left := post(gone, read(2))
	second := post(t.Context(), read(3))
	long := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"customers_update","arguments":{"name":"` + strings.Repeat("x", 3*methodPeek) + `"}}}`
	<-post(t.Context(), long)
	if b := next(); b != long {
		t.Fatalf("while a read ran, the handler read %.80q, want the tool call, whole", b)
	}
	leave()
	<-left
	release <- struct{}{}
	<-first
	if b := next(); b != read(3) {
		t.Errorf("after the first read, the handler read %q, want the third (the second's client left)", b)
	}
	close(release)
	<-second
}
