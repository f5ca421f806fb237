package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// The wire benchmarks: the adapter behind mcp-go's Streamable HTTP server,
// served by net/http on loopback with one event store for both, as the
// example serves it, to legacy sessions that subscribe with
// resources/subscribe and hear notifications on their GET streams. The
// clients run in a child process (wireclient_test.go), so that the CPU
// the benchmark reports is the server's alone: the adapter's, mcp-go's,
// net/http's and the kernel's work for its sockets.

// wireDistinct is how many distinct URIs the sessions' subscriptions
// spread over: few, so that a change costs notifications, not re-runs.
const wireDistinct = 100

// BenchmarkWireFanout: one change that every subscription hears, on the
// wire. An op bumps the items' version, calls Changed("items") and waits
// until every notification has arrived at the clients. It reports the
// server's CPU per op (cpu-ms/op), notifications per CPU-second of the
// server (notes/cpu-s), and the server's heap and stacks per subscription
// once notified (B/sub), the sessions' included: mcp-go's, net/http's, the
// adapter's and the event store's.
func BenchmarkWireFanout(b *testing.B) {
	for _, size := range []struct{ sessions, perSession int }{{200, 20}, {200, 50}} {
		b.Run(fmt.Sprintf("sessions=%d,subs=%d", size.sessions, size.perSession), func(b *testing.B) {
			ws := startWire(b, size.sessions, size.perSession)
			subs := size.sessions * size.perSession
			cpu := startCPU(b)
			start := processCPU(b)
			b.ResetTimer()
			for range b.N {
				ws.st.version.Add(1)
				ws.a.Changed("items")
				ws.expected += int64(subs)
				ws.do(b, "wait "+strconv.FormatInt(ws.expected, 10))
			}
			b.StopTimer()
			cpu.report(b.N)
			used := processCPU(b) - start
			b.ReportMetric(float64(subs*b.N)/used.Seconds(), "notes/cpu-s")
			b.ReportMetric(float64(heapAndStacks()-ws.before)/float64(subs), "B/sub")
		})
	}
}

// BenchmarkWireRead: resources/read of a live command's URI over the
// wire, on the sessions of BenchmarkWireFanout (200 of 20 subscriptions),
// 16 at a time. It reports the server's CPU per read (cpu-µs/read) and
// reads per CPU-second of the server (reads/cpu-s). The URIs read are
// subscribed: in kept their live queries' kept results answer; in run the
// command opts out (adapter.WithoutKeptResults), and each read runs it.
// The command is trivial: what is left is the path's own cost, which a
// kept result does not save (examples/customers' BenchmarkReadKeptOrRun
// has the example's SQLite queries).
func BenchmarkWireRead(b *testing.B) {
	for _, kept := range []bool{true, false} {
		name, opts := "kept", []adapter.CommandOption(nil)
		if !kept {
			name, opts = "run", []adapter.CommandOption{adapter.WithoutKeptResults()}
		}
		b.Run(name, func(b *testing.B) {
			ws := startWire(b, 200, 20, opts...)
			start := processCPU(b)
			b.ResetTimer()
			ws.do(b, "read "+strconv.Itoa(b.N))
			b.StopTimer()
			used := processCPU(b) - start
			if answered := ws.a.LiveStats().KeptAnswers; kept != (answered >= uint64(b.N)) {
				b.Fatalf("%d of %d reads answered from kept results", answered, b.N)
			}
			b.ReportMetric(float64(used)/float64(time.Microsecond)/float64(b.N), "cpu-µs/read")
			b.ReportMetric(float64(b.N)/used.Seconds(), "reads/cpu-s")
		})
	}
}

// wireServer is the server of a wire benchmark and its child of clients.
type wireServer struct {
	a  *adapter.Adapter
	st *counterStore
	// before is the server's heap and stacks before the clients came.
	before int64
	// expected is how many notifications the clients should have had so
	// far.
	expected int64

	in  io.WriteCloser
	out *bufio.Scanner
}

// startWire serves the adapter on loopback and starts a child with
// sessions clients of perSession subscriptions each, and waits until they
// have subscribed. Everything stops when the benchmark ends.
func startWire(b *testing.B, sessions, perSession int, opts ...adapter.CommandOption) *wireServer {
	b.Helper()
	srv := server.NewMCPServer("bench", "1")
	ws := &wireServer{a: adapter.Wrap(srv), st: &counterStore{}}
	adapter.Live(ws.a, "items_show", "One item.", ws.st.show, append(opts, adapter.WithReads("items"))...)
	events := adapter.NewEventStore(0)
	streamable := server.NewStreamableHTTPServer(srv, server.WithEventStore(events))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: ws.a.HTTPHandler(streamable, adapter.WithEventStore(events)), ReadHeaderTimeout: wireTimeout}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	ws.before = heapAndStacks()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), fmt.Sprintf("%s=http://%s/mcp,%d,%d,%d", wireClientEnv, ln.Addr(), sessions, perSession, wireDistinct))
	child.Stderr = os.Stderr
	if ws.in, err = child.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	ws.out = bufio.NewScanner(stdout)
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ws.in.Close() // the child closes its sessions and exits
		exited := make(chan error, 1)
		go func() { exited <- child.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				b.Errorf("the clients' process: %v", err)
			}
		case <-time.After(wireTimeout):
			child.Process.Kill()
			b.Errorf("the clients' process did not exit within %v of its stdin closing", wireTimeout)
			<-exited
		}
		ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
		defer cancel()
		if err := errors.Join(ws.a.Close(ctx), streamable.Shutdown(ctx), hs.Shutdown(ctx)); err != nil {
			b.Errorf("closing: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			b.Errorf("serving: %v", err)
		}
	})
	ws.expect(b, "ready")
	return ws
}

// do tells the clients what to do and waits until they say they did.
func (ws *wireServer) do(b *testing.B, command string) {
	if _, err := io.WriteString(ws.in, command+"\n"); err != nil {
		b.Fatalf("the clients' process: %v", err)
	}
	ws.expect(b, "ok")
}

// expect reads the clients' next line, which must be want. The clients
// bound their own waits by wireTimeout, and exit, closing their stdout,
// when one fails.
func (ws *wireServer) expect(b *testing.B, want string) {
	if !ws.out.Scan() {
		b.Fatalf("the clients' process ended before saying %q: %v", want, ws.out.Err())
	}
	if got := ws.out.Text(); got != want {
		b.Fatalf("the clients' process said %q, want %q", got, want)
	}
}

// heapAndStacks is the memory a server's sessions hold: its live heap,
// after two collections, and its goroutines' stacks.
func heapAndStacks() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}
