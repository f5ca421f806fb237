package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// The streams of clients that stop reading, served through HTTPHandler by
// a real server: each test's hostile client is a raw connection that
// writes its request and never reads a byte of the answer.

// hostileHeader marks the requests of the client that never reads, so
// that the server can say when their handlers return.
const hostileHeader = "X-Never-Reads"

// hostileServer serves a through HTTPHandler on a listener whose
// connections have small send buffers. The channel it returns receives
// once for each request of the hostile client whose handler returned.
func hostileServer(t *testing.T, a *Adapter, opts ...server.StreamableHTTPOption) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	h := a.HTTPHandler(server.NewStreamableHTTPServer(a.Server(), opts...))
	returned := make(chan struct{}, 16)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Header.Get(hostileHeader) != "" {
			returned <- struct{}{}
		}
	}))
	hs.Listener = smallSendBuffers{hs.Listener}
	hs.Start()
	return hs, returned
}

// neverReads sends one request on a new connection with a small receive
// buffer, and never reads its answer.
func neverReads(t *testing.T, hs *httptest.Server, method string, header http.Header, body []byte) net.Conn {
	t.Helper()
	// The receive buffer is set before connecting: set after, it no
	// longer shrinks the window the connection began with, and loopback
	// then takes in some 100 KB unread.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
	}}
	conn, err := d.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s / HTTP/1.1\r\nHost: %s\r\n%s: 1\r\nContent-Length: %d\r\n", method, hs.Listener.Addr(), hostileHeader, len(body))
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	b.Write(body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// itemURIs are the URIs of items 1 to n, and the keys their reads file.
func itemURIs(n int) (uris, keys []string) {
	for i := 1; i <= n; i++ {
		uris = append(uris, fmt.Sprintf("app://items_show/%d", i))
		keys = append(keys, fmt.Sprintf("items/%d", i))
	}
	return uris, keys
}

// changeUntil changes every item the keys name, round after round, until
// done is ready or 10 s have passed: each round notifies every
// subscription of them once more, and the connection of a client that
// does not read is soon full. It reports whether done was ready.
func changeUntil(a *Adapter, st *itemStore, keys []string, done <-chan struct{}) bool {
	deadline := time.Now().Add(10 * time.Second)
	for round := 0; time.Now().Before(deadline); round++ {
		for i := range keys {
			st.set(i+1, fmt.Sprint("v", round))
		}
		a.Changed(keys...)
		select {
		case <-done:
			return true
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// TestListenStreamOfAClientThatNeverReads: a 2026-07-28 listen stream
// through HTTPHandler had no write timeout, where a legacy GET stream has
// 30 s. A client that never reads kept mcp-go's write into its stream
// blocked, and with it the request's handler, the listen subscriptions and
// their places under the caps, for as long as the TCP connection lasted.
// Every write into the stream must fail once the client has not read it
// for the stream's write timeout: the request then ends, and frees its
// subscriptions.
func TestListenStreamOfAClientThatNeverReads(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(64)
	a := newLiveServer(t, st)
	a.live.streamWriteTimeout = 100 * time.Millisecond
	hs, returned := hostileServer(t, a)
	defer hs.Close()
	defer hs.CloseClientConnections() // a blocked write fails, should the test fail

	uris, keys := itemURIs(64)
	neverReads(t, hs, http.MethodPost, http.Header{
		"Content-Type":            {"application/json"},
		"Accept":                  {"application/json, text/event-stream"},
		mcp.HeaderProtocolVersion: {mcp.ProtocolVersion20260728},
		mcp.HeaderMethod:          {string(mcp.MethodSubscriptionsListen)},
	}, listenRequest(1, uris))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool { return a.live.subs == len(uris) }); err != nil {
		t.Fatalf("the listen stream was not acknowledged: %+v", a.LiveStats())
	}

	if !changeUntil(a, st, keys, returned) {
		t.Fatalf("the listen request of a client that never reads is still served 10 s on: %+v", a.LiveStats())
	}
	if err := a.live.waitFor(ctx, func() bool { return a.live.subs == 0 && len(a.live.clients) == 0 }); err != nil {
		t.Fatalf("the listen stream of a client that never reads still holds its subscriptions (%d places under the client cap): %+v", len(a.live.clients), a.LiveStats())
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	if err := a.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
}

// legacyGetHeader is the header of a legacy GET stream on session id.
func legacyGetHeader(id string) http.Header {
	return http.Header{
		"Accept":                  {"text/event-stream"},
		mcp.HeaderProtocolVersion: {mcp.LATEST_LEGACY_PROTOCOL_VERSION},
		server.HeaderKeySessionID: {id},
	}
}

// TestCloseIsNotHeldByAStalledGetStream: Close's first step lets the
// deliveries under way finish, and one writing into the GET stream of a
// client that never reads is not waiting for room in a channel but blocked
// in the write: Close waited for the stream's write timeout, 30 s, before
// it ended a single subscription. A client that does not read holds up
// Close for no longer than a client that reads takes to take an event.
func TestCloseIsNotHeldByAStalledGetStream(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	st := newItemStore(64)
	a := newLiveServer(t, st) // the GET streams' write timeout stays 30 s
	hs, returned := hostileServer(t, a)
	defer hs.Close()
	defer hs.CloseClientConnections() // a blocked write fails, should the test fail

	s := newRawSession(t, hs.URL)
	uris, keys := itemURIs(64)
	for _, u := range uris {
		s.call("resources/subscribe", map[string]any{"uri": u})
	}
	neverReads(t, hs, http.MethodGet, legacyGetHeader(s.id), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Change everything until a delivery stays in a write into the stream
	// (until it opens, notifications wait for it).
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		for {
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			err := a.live.waitFor(short, func() bool { return a.live.workers == 0 && a.live.deliverers.Load() == 0 })
			cancel()
			if ctx.Err() != nil {
				return
			}
			if gs := a.live.gets.newest(s.id); err != nil && gs != nil && gs.writes.writing.Load() {
				return
			}
		}
	}()
	if !changeUntil(a, st, keys, stalled) || ctx.Err() != nil {
		t.Fatalf("no write into the GET stream stalled: %+v", a.LiveStats())
	}

	closeCtx, cancelClose := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelClose()
	start := time.Now()
	err := a.Close(closeCtx)
	if took := time.Since(start); err != nil || took > 5*time.Second {
		t.Fatalf("Close with a GET stream nobody reads took %v and returned: %v", took.Round(time.Millisecond), err)
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream of the client that never reads is still served after Close")
	}
}

// TestGetStreamOpenedAfterClose: from Close on every write into a legacy
// GET stream through HTTPHandler fails, mcp-go's included; Close cut the
// streams open when it came, but one opened during or after it went on
// carrying mcp-go's writes (here its heartbeat) for as long as the client
// kept it. The stream must end at its first write.
func TestGetStreamOpenedAfterClose(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	a := newLiveServer(t, newItemStore(1))
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server(), server.WithHeartbeatInterval(10*time.Millisecond))))
	defer hs.Close()
	s := newRawSession(t, hs.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	res, err := http.DefaultClient.Do(s.request(http.MethodGet, nil).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || len(body) > 0 {
		t.Fatalf("a GET stream opened after Close carried %d bytes (%q…) and ended with %v, want nothing and its end", len(body), body[:min(len(body), 80)], err)
	}
}

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
	gs := newGetStream(w, w, "s", getStreamConfig{timeout: 20 * time.Millisecond, onOpen: func(*getStream) {}})
	w.Header().Set("Content-Type", "text/event-stream")
	gs.WriteHeader(http.StatusOK)

	mcpgo := make(chan error, 1)
	go func() {
		_, err := gs.Write([]byte("event: message\ndata: {}\n\n"))
		mcpgo <- err
	}()
	adapter := make(chan error, 1)
	go func() { adapter <- gs.writeEvent([]byte("{}"), slog.Default()) }()

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
	if err := gs.writeEvent([]byte("{}"), slog.Default()); err != errStreamClosed {
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

// deadlineWriter records the write deadlines set on it, and whether one
// was set while WriteHeader ran; hijacked makes it answer as a hijacked
// response does.
type deadlineWriter struct {
	header     http.Header
	deadlines  []time.Time
	inHeader   []time.Time // the deadline in force when WriteHeader ran
	hijacked   bool
	panicWrite bool
}

func (w *deadlineWriter) Header() http.Header { return w.header }
func (w *deadlineWriter) WriteHeader(int) {
	var d time.Time
	if n := len(w.deadlines); n > 0 {
		d = w.deadlines[n-1]
	}
	w.inHeader = append(w.inHeader, d)
}
func (w *deadlineWriter) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if w.panicWrite {
		panic("the writer broke")
	}
	return len(p), nil
}
func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.deadlines = append(w.deadlines, t)
	return nil
}

// A write that panics leaves no deadline on the connection and no write
// marked under way: Close would otherwise reach a connection net/http
// has moved on with.
func TestStreamWritesRecoverFromAPanickingWrite(t *testing.T) {
	w := &deadlineWriter{header: http.Header{}, panicWrite: true}
	var s streamWrites
	func() {
		defer func() { _ = recover() }()
		_ = s.do(w, time.Minute, func() error { _, err := w.Write([]byte("x")); return err })
	}()
	if s.writing.Load() || !s.deadline.IsZero() {
		t.Errorf("after a panicking write: writing %v, deadline %v; want neither", s.writing.Load(), s.deadline)
	}
	if n := len(w.deadlines); n != 2 || !w.deadlines[1].IsZero() {
		t.Errorf("deadlines set %v; want one, then cleared", w.deadlines)
	}
}

// What net/http writes after the handler returns is bounded, unless the
// connection was hijacked; an informational response is bounded too.
func TestHTTPEdgeBoundsWritesAroundTheHandler(t *testing.T) {
	w := &deadlineWriter{header: http.Header{}}
	boundAfterHandler(w, time.Minute)
	if len(w.deadlines) != 1 || time.Until(w.deadlines[0]) < 30*time.Second {
		t.Errorf("after the handler: deadlines %v; want one a minute ahead", w.deadlines)
	}
	hijacked := &deadlineWriter{header: http.Header{}, hijacked: true}
	boundAfterHandler(hijacked, time.Minute)
	if len(hijacked.deadlines) != 0 {
		t.Errorf("a hijacked connection got deadlines %v; want none", hijacked.deadlines)
	}

	info := &deadlineWriter{header: http.Header{}}
	e := &httpEdge{w: info, timeout: time.Minute}
	e.WriteHeader(http.StatusEarlyHints)
	if len(info.inHeader) != 1 || info.inHeader[0].IsZero() {
		t.Errorf("103 Early Hints written with deadline %v; want one in force", info.inHeader)
	}
}

// lateWriter is a response writer that says when it is written to after
// its handler returned (ended), as a keep-alive timer left running would.
type lateWriter struct {
	header http.Header
	mu     sync.Mutex
	ended  bool
	late   chan struct{}
}

func newLateWriter() *lateWriter {
	return &lateWriter{header: http.Header{}, late: make(chan struct{})}
}

func (w *lateWriter) Header() http.Header { return w.header }
func (w *lateWriter) WriteHeader(int)     { w.used() }
func (w *lateWriter) Flush()              { w.used() }
func (w *lateWriter) Write(p []byte) (int, error) {
	w.used()
	return len(p), nil
}

func (w *lateWriter) used() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		select {
		case <-w.late:
		default:
			close(w.late)
		}
	}
}

func (w *lateWriter) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}

// A handler that panics once its response is an event stream (as one that
// aborts with http.ErrAbortHandler does) leaves nothing of the stream
// behind: no keep-alive writes into the response net/http has taken back,
// and no GET stream the registry would deliver to.
func TestPanickingHandlerLeavesNoStreamBehind(t *testing.T) {
	const every = 2 * time.Millisecond
	a := Wrap(server.NewMCPServer("t", "1"))
	h := a.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("event: message\ndata: {}\n\n"))
		panic(http.ErrAbortHandler)
	}), WithKeepAlive(every))
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			w := newLateWriter()
			body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			req := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
			req.Header.Set(server.HeaderKeySessionID, "s-"+method)
			func() {
				defer func() {
					if p := recover(); p != http.ErrAbortHandler {
						t.Errorf("the handler's panic: %v, want it passed on", p)
					}
				}()
				h.ServeHTTP(w, req)
			}()
			w.end()
			if method == http.MethodGet && a.live.gets.newest("s-GET") != nil {
				t.Error("the GET stream of a handler that panicked is still open to the registry")
			}
			select {
			case <-w.late:
				t.Error("written to after the handler returned")
			case <-time.After(50 * every):
			}
		})
	}
}

// The notifications of legacy subscriptions are encoded without
// encoding/json, byte for byte as it encodes them; any other goes through
// it.
func TestAppendNotificationIsJSONMarshal(t *testing.T) {
	uri := func(u string) mcp.NotificationParams {
		return mcp.NotificationParams{AdditionalFields: map[string]any{"uri": u}}
	}
	tests := []struct {
		name  string
		p     mcp.NotificationParams
		plain bool
	}{
		{"a plain URI", uri("app://customers_show/12"), true},
		{"a query", uri("app://customers_index?page=1;per_page=20"), true},
		{"percent-encoded", uri("app://customers_index?search=G%C3%96DEL"), true},
		{"an ampersand, which json escapes", uri("app://x?a=1&b=2"), true},
		{"angle brackets", uri("app://x?a=<b>"), true},
		{"every printable character", uri(printableASCII()), false},
		{"every printable character but quote and backslash", uri(strings.NewReplacer(`"`, "", `\`, "").Replace(printableASCII())), true},
		{"a quote and a backslash", uri(`app://x?a="\`), false},
		{"not ASCII", uri("app://x?search=gödel"), false},
		{"a control character", uri("app://x?a=\x01"), false},
		{"empty", uri(""), true},
		{"a subscription id", mcp.NotificationParams{Meta: map[string]any{mcp.MetaKeySubscriptionID: "s1"}, AdditionalFields: map[string]any{"uri": "app://a"}}, false},
		{"another field", mcp.NotificationParams{AdditionalFields: map[string]any{"uri": "app://a", "x": 1}}, false},
		{"a URI that is not a string", mcp.NotificationParams{AdditionalFields: map[string]any{"uri": 7}}, false},
	}
	for _, tt := range tests {
		n := resourceUpdated(tt.p)
		want, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendNotification([]byte("prefix"), n)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("%s: appendNotification = %s, %v; want prefix%s", tt.name, got, err, want)
		}
		if _, plain := plainResourceUpdated(n); plain != tt.plain {
			t.Errorf("%s: plain %v, want %v", tt.name, plain, tt.plain)
		}
		if u, ok := tt.p.AdditionalFields["uri"].(string); ok && tt.p.Meta == nil && len(tt.p.AdditionalFields) == 1 {
			if got, err := appendURIUpdated(nil, u); err != nil || string(got) != string(want) {
				t.Errorf("%s: appendURIUpdated = %s, %v; want %s", tt.name, got, err, want)
			}
		}
	}
	n := resourceUpdated(uri("app://customers_index?sort=created_at&per_page=20&page=1"))
	buf := make([]byte, 0, 256)
	if allocs := testing.AllocsPerRun(100, func() { buf, _ = appendNotification(buf[:0], n) }); allocs != 0 {
		t.Errorf("a plain notification costs %v allocations, want none", allocs)
	}
}

func printableASCII() string {
	var b strings.Builder
	for c := byte(0x20); c <= 0x7e; c++ {
		b.WriteByte(c)
	}
	return b.String()
}

// countingWriter is a ResponseWriter that records what is written, and
// counts writes and flushes.
type countingWriter struct {
	header          http.Header
	body            strings.Builder
	writes, flushes int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(int)     {}
func (w *countingWriter) Flush()              { w.flushes++ }
func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.body.Write(p)
}

// Notifications ready together go into the stream in one write and one
// flush, each its own event with the id the store gave it.
func TestGetStreamWritesEventsTogether(t *testing.T) {
	w := &countingWriter{header: http.Header{}}
	store := NewEventStore(0)
	gs := newGetStream(w, w, "s", getStreamConfig{store: store, onOpen: func(*getStream) {}})
	w.Header().Set("Content-Type", "text/event-stream")
	gs.WriteHeader(http.StatusOK) // writes the priming event, id 1
	w.writes, w.flushes = 0, 0
	w.body.Reset()
	msgs := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`), []byte(`{"c":3}`)}
	if err := gs.writeEvents(msgs, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if w.writes != 1 || w.flushes != 1 {
		t.Errorf("three events took %d writes and %d flushes, want 1 and 1", w.writes, w.flushes)
	}
	want := "id: 2\nevent: message\ndata: {\"a\":1}\n\n" +
		"id: 3\nevent: message\ndata: {\"b\":2}\n\n" +
		"id: 4\nevent: message\ndata: {\"c\":3}\n\n"
	if got := w.body.String(); got != want {
		t.Errorf("the stream carries %q, want %q", got, want)
	}
	var replayed []string
	if _, err := store.ReplayEventsAfter(t.Context(), "s", "2", func(id string, msg json.RawMessage) error {
		replayed = append(replayed, id+"="+string(msg))
		return nil
	}); err != nil || strings.Join(replayed, " ") != `3={"b":2} 4={"c":3}` {
		t.Errorf("replayed after 2: %q, %v; want the second and third events", replayed, err)
	}
}
