package adapter

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// stallingWriter is the writer of a stream whose client reads nothing: a
// write blocks until the write deadline, and then fails, as one into a full
// TCP connection does; with no deadline it blocks for good.
type stallingWriter struct {
	header http.Header
	// writing is closed when the first write begins.
	writing   chan struct{}
	startOnce sync.Once

	mu       sync.Mutex
	deadline time.Time
	changed  chan struct{} // closed, and replaced, when the deadline changes
}

func newStallingWriter() *stallingWriter {
	return &stallingWriter{header: http.Header{}, changed: make(chan struct{}), writing: make(chan struct{})}
}

func (w *stallingWriter) Header() http.Header { return w.header }
func (w *stallingWriter) WriteHeader(int)     {}
func (w *stallingWriter) Flush()              {}

func (w *stallingWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadline = t
	close(w.changed)
	w.changed = make(chan struct{})
	return nil
}

func (w *stallingWriter) Write([]byte) (int, error) {
	w.startOnce.Do(func() { close(w.writing) })
	for {
		w.mu.Lock()
		deadline, changed := w.deadline, w.changed
		w.mu.Unlock()
		var expired <-chan time.Time
		if !deadline.IsZero() {
			expired = time.After(time.Until(deadline))
		}
		select {
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		case <-changed:
		}
	}
}

// stalledEdge is the HTTP edge of a listen response whose client stopped
// reading: its header is out (an event stream), and every write into the
// connection blocks until a write deadline passes.
func stalledEdge() (*httpEdge, *stallingWriter) {
	w := newStallingWriter()
	e := &httpEdge{w: w}
	e.events.out = w
	var ew http.ResponseWriter = &flushingHTTPEdge{e, w}
	ew.Header().Set("Content-Type", "text/event-stream")
	ew.WriteHeader(http.StatusOK)
	return e, w
}

// A client that stops reading its GET stream holds up the stream for at
// most its write timeout, whoever writes: mcp-go's writes (server
// notifications, pings) used to block with the stream's mutex held and no
// deadline, and the adapter's next event, and with it the session's
// notifications on its next stream, waited for as long as the connection
// lasted.
func TestGetStreamBoundsEveryWrite(t *testing.T) {
	w := newStallingWriter()
	gs := newGetStream(w, w, "s", 20*time.Millisecond, func(*getStream) {})
	w.Header().Set("Content-Type", "text/event-stream")
	gs.WriteHeader(http.StatusOK)

	mcpgo := make(chan error, 1)
	go func() {
		_, err := gs.Write([]byte("event: message\ndata: {}\n\n"))
		mcpgo <- err
	}()
	adapter := make(chan error, 1)
	go func() { adapter <- gs.writeEvent([]byte("{}")) }()

	for name, done := range map[string]chan error{"mcp-go's write": mcpgo, "the adapter's event": adapter} {
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s into a stream nobody reads succeeded", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s into a stalled stream is still waiting, past the stream's write timeout", name)
		}
	}
	if err := gs.writeEvent([]byte("{}")); err != errStreamClosed {
		t.Errorf("an event after a failed write: %v, want the stream closed", err)
	}
}

// A client that stops reading its subscriptions/listen stream holds up
// mcp-go's write into it, and the answer Close writes after it: once
// Close's context has ended, those writes are cut short and Close returns
// instead of waiting for as long as the connection lasts.
func TestCloseCutsShortAStalledListenStream(t *testing.T) {
	e, w := stalledEdge()
	ew := &flushingHTTPEdge{e, w}
	mcpgo := make(chan error, 1)
	go func() {
		_, err := ew.Write([]byte("event: message\ndata: {}\n\n"))
		mcpgo <- err
	}()
	<-w.writing // mcp-go's write is blocked, holding the edge
	cancelled := make(chan struct{})
	lc := &listenCloser{id: json.RawMessage(`7`), edge: e, cancel: func() { close(cancelled) }}

	a := Wrap(server.NewMCPServer("t", "1"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ended := make(chan struct{})
	go func() {
		a.endListenRequests(ctx, []*stream{{closer: lc}})
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("ending a stalled listen stream is still waiting, well past Close's context")
	}
	if err := <-mcpgo; err == nil {
		t.Error("mcp-go's write into the stalled stream succeeded")
	}
	<-cancelled // the request is cancelled all the same
}

// A write into a listen stream that begins after Close aborted it fails at
// once rather than waiting on a client that reads nothing.
func TestAbortedListenStreamRefusesLaterWrites(t *testing.T) {
	e, w := stalledEdge()
	ew := &flushingHTTPEdge{e, w}
	e.abort() // no write under way
	done := make(chan error, 1)
	go func() {
		_, err := ew.Write([]byte("event: message\ndata: {}\n\n"))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a write after the abort succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write after the abort is waiting on a client that reads nothing")
	}
}
