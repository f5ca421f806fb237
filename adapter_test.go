package adapter

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// A second Close after the first has returned finds nothing left to wait
// for: it answers nil whatever its ctx, as the first did, instead of a
// coin toss between the first's end and ctx's (both ready).
func TestMisuseCloseAgainAfterCloseReturned(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tc := range []struct {
		name   string
		second context.Context
	}{
		{"background", context.Background()},
		{"expired", expired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newLiveServer(t, newItemStore(2))
			if err := a.Close(context.Background()); err != nil {
				t.Fatalf("first Close: %v", err)
			}
			// select picks at random among ready cases: enough tries
			// that a coin toss shows.
			for i := range 64 {
				if err := a.Close(tc.second); err != nil {
					t.Fatalf("Close #%d after the first returned nil: %v", i+2, err)
				}
			}
		})
	}
}

// One server has one adapter. A second Wrap used to succeed and break the
// first silently: reads of its commands answered -32603 "resource not
// found", resources/subscribe answered not-found yet held the
// subscription, and completion went to the second adapter. It panics,
// saying so; a Wrap that panicked on an option did not wrap the server.
func TestMisuseWrapTwice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     []Option
		wantFirst bool // the first Wrap panics
	}{
		{"after a Wrap", nil, false},
		{"after a Wrap with options", []Option{WithScheme("shop"), WithSubscriptionCap(3)}, false},
		{"after a Wrap that panicked", []Option{WithSubscriptionCap(0)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server.NewMCPServer("t", "1")
			if got := panicOf(func() { Wrap(srv, tc.first...) }); (got != nil) != tc.wantFirst {
				t.Fatalf("first Wrap panicked with %v, want a panic: %v", got, tc.wantFirst)
			}
			got := panicOf(func() { Wrap(srv, WithScheme("other")) })
			if tc.wantFirst {
				if got != nil {
					t.Fatalf("Wrap of a server whose first Wrap panicked: %v", got)
				}
				return
			}
			if msg, _ := got.(string); !strings.Contains(msg, "adapter.Wrap: the server is wrapped already") {
				t.Fatalf("second Wrap of one server: panic %#v, want one saying it is wrapped already", got)
			}
		})
	}
}

func panicOf(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// A nil context is a programming error: Close and WaitIdle panic saying
// so, before anything changes. Close used to mark the adapter closed, then
// panic on a nil pointer part of the way through (with a re-run under way,
// before ending any subscription), and a later Close(ctx) only waited for
// the first, so what the first had not done stayed undone. WaitIdle
// panicked on a nil pointer, or not, depending on whether work was pending.
func TestMisuseNilContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(a *Adapter) error
		want string
	}{
		{"Close", func(a *Adapter) error { return a.Close(nil) }, "adapter: Close: nil context"}, //nolint:staticcheck // the misuse under test
		{"WaitIdle", func(a *Adapter) error { return a.WaitIdle(nil) }, "adapter: WaitIdle: nil context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newLiveServer(t, newItemStore(2))
			f := newFakeClient(t, a, "f", 16)
			if err := f.subscribe("app://items_show/1"); err != nil {
				t.Fatalf("subscribe: %+v", err)
			}
			got := panicOf(func() { _ = tc.call(a) })
			if msg, _ := got.(string); msg != tc.want {
				t.Fatalf("panic %#v, want %q", got, tc.want)
			}
			if a.live.closing.Load() {
				t.Fatal("the adapter is closing after the panic")
			}
			if err := a.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if s := a.LiveStats(); s.Subscriptions != 0 || s.Sessions != 0 {
				t.Fatalf("after Close: %+v, want no subscription left", s)
			}
		})
	}
}

// Reads and ReadsAt with a nil context panic saying so, where they
// panicked on a nil pointer.
func TestMisuseNilContextReads(t *testing.T) {
	var nilCtx context.Context
	for _, tc := range []struct {
		call func()
		want string
	}{
		{func() { Reads(nilCtx, "items") }, "adapter: Reads: nil context"},
		{func() { ReadsAt(nilCtx, 0, "items") }, "adapter: ReadsAt: nil context"},
	} {
		if msg, _ := panicOf(tc.call).(string); msg != tc.want {
			t.Errorf("panic %q, want %q", msg, tc.want)
		}
	}
}

// A nil option (one left unset by a conditional, say) panics naming the
// option, where it used to panic on a nil pointer.
func TestMisuseNilOption(t *testing.T) {
	show := func(context.Context, itemArgs) (int, error) { return 1, nil }
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"Wrap", func() { Wrap(server.NewMCPServer("t", "1"), WithScheme("shop"), nil) }, "adapter.Wrap: option 1 is nil"},
		{"Live", func() { Live(Wrap(server.NewMCPServer("t", "1")), "one", "One.", show, nil) }, `adapter: command "one": option 0 is nil`},
		{"Command", func() { Command(Wrap(server.NewMCPServer("t", "1")), "one", "One.", show, WithTitle("One"), nil) }, `adapter: command "one": option 1 is nil`},
		{"HTTPHandler", func() {
			Wrap(server.NewMCPServer("t", "1")).HTTPHandler(http.NotFoundHandler(), nil)
		}, "adapter: HTTPHandler: option 0 is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := panicOf(tc.call); got != tc.want {
				t.Fatalf("panic %#v, want %q", got, tc.want)
			}
		})
	}
}

// TestConsumerModuleGraph builds the module graph of a program that imports
// only this package, as a user's would be, and of a plain mcp-go program.
// The adapter may add its own dependencies (x/time, invopop/jsonschema,
// santhosh-tekuri/jsonschema, x/text) but no database driver and no test
// library: those live in modules of their own (pgfeed, examples, bench, e2e).
func TestConsumerModuleGraph(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v)", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	withAdapter := moduleGraph(t, goCmd, root, `import _ "github.com/mcplive/adapter"`)
	plain := moduleGraph(t, goCmd, root, `import _ "github.com/mark3labs/mcp-go/server"`)

	forbidden := regexp.MustCompile(`jackc/|modernc\.org/|sqlite|go\.uber\.org/goleak|pgregory\.net/rapid|modelcontextprotocol/go-sdk|opentelemetry|prometheus|chromedp`)
	var added []string
	for _, m := range withAdapter {
		if forbidden.MatchString(m) {
			t.Errorf("a program importing only the adapter inherits %s", m)
		}
		if !strings.Contains(strings.Join(plain, "\n")+"\n", m+"\n") && !strings.HasPrefix(m, "example.com/") {
			added = append(added, m)
		}
	}
	t.Logf("modules: %d for a plain mcp-go program, %d with the adapter; added: %s",
		len(plain), len(withAdapter), strings.Join(added, ", "))
}

// moduleGraph returns `go list -m all` (module paths) of a fresh module whose
// one file has the given import, requiring this module through a replace.
func moduleGraph(t *testing.T, goCmd, root, imp string) []string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/consumer\n\ngo 1.25.5\n\nrequire github.com/mcplive/adapter v0.0.0\n\nreplace github.com/mcplive/adapter => " + root + "\n",
		"main.go": "package main\n\n" + imp + "\n\nfunc main() {}\n",
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	var mods []string
	for line := range strings.Lines(run("list", "-m", "all")) {
		if f := strings.Fields(line); len(f) > 0 {
			mods = append(mods, f[0])
		}
	}
	return mods
}
