package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Delivery on the legacy GET stream.
//
// Before 2026-07-28, a Streamable HTTP client hears the server's
// notifications on a GET stream it keeps open, and mcp-go's session hands
// them to it through one channel. But mcp-go also starts, for every POST on
// the session, a forwarder that takes notifications off that same channel
// to write them into the POST's response, and a forwarder drops what it
// took once its POST has been answered (mcp-go v1.2.1,
// streamable_http.go, the forwarder's done case, and when the response
// cannot stream). A client that POSTs while it is notified, re-reading
// what it was told changed, loses notifications: the final change of a
// URI may never be announced.
//
// So through HTTPHandler the adapter does not use the channel for the
// legacy sessions it serves. It writes notifications/resources/updated into
// the session's GET stream itself: HTTPHandler wraps the writer of every
// legacy GET in a getStream, which takes the adapter's events and mcp-go's
// in turn, each whole, and the live registry delivers to the newest open
// stream of the session. A write that fails leaves the notification
// pending for the next stream the client opens; while the session has no
// stream, notifications wait, one per subscription at most, as they would
// for a slow client. This is the stream the transport specifies for
// messages unrelated to a request, and every client that subscribes keeps
// one open.

// getStream is the http.ResponseWriter HTTPHandler hands mcp-go for a
// legacy GET, and the registry's way to write into the stream.
type getStream struct {
	sessionID string
	w         http.ResponseWriter
	f         http.Flusher
	// onOpen tells the live registry that the stream can take events.
	onOpen func(*getStream)
	// timeout bounds every write into the stream, mcp-go's and the
	// adapter's (streamWriteTimeout).
	timeout time.Duration

	mu   sync.Mutex
	cond sync.Cond // signalled when an event ends or the stream closes
	// open: mcp-go answered with an event stream, and the handler has not
	// returned. The writer is usable only then.
	open   bool
	closed bool // the handler returned, or a write failed
	// midEvent: mcp-go wrote part of an event and not yet its end; the
	// adapter's events wait for it, so that the two never interleave.
	midEvent bool
	tail     [2]byte // the last two bytes mcp-go wrote
	// writes are the writes into the stream, the adapter's and mcp-go's,
	// which Close can cut short (abort).
	writes streamWrites

	// store keeps the adapter's events, for a client that resumes; after
	// is the Last-Event-ID this stream resumes from ("" for none), and
	// catchUp that it resumes from an id the store does not know.
	store   server.EventStore
	after   string
	catchUp bool
	// subscribed gives the URIs a session holds subscriptions to now: a
	// replay brings back the notifications of those alone.
	subscribed func(sessionID string) map[string]bool
	// keepAlive writes a comment into the stream when it has been quiet
	// for keepAliveEvery (0: never), so that proxies keep it open.
	keepAlive      *time.Timer
	keepAliveEvery time.Duration
}

// getStreamConfig is what an HTTPHandler's GET streams are made with.
type getStreamConfig struct {
	store          server.EventStore
	keepAliveEvery time.Duration
	timeout        time.Duration
	onOpen         func(*getStream)
	subscribed     func(sessionID string) map[string]bool
}

func newGetStream(w http.ResponseWriter, f http.Flusher, sessionID string, cfg getStreamConfig) *getStream {
	gs := &getStream{sessionID: sessionID, w: w, f: f, timeout: cfg.timeout, onOpen: cfg.onOpen,
		store: cfg.store, keepAliveEvery: cfg.keepAliveEvery, subscribed: cfg.subscribed}
	gs.cond.L = &gs.mu
	return gs
}

// flushingGetStream is a getStream over a writer that can flush: mcp-go
// serves a GET stream only through an http.Flusher.
type flushingGetStream struct{ *getStream }

func (gs flushingGetStream) Flush() {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if !gs.closed {
		if gs.bounded(func() error { gs.f.Flush(); return nil }) != nil {
			gs.closeLocked()
		}
	}
}

func (gs *getStream) Header() http.Header { return gs.w.Header() }

// Unwrap returns the server's writer, for http.ResponseController.
func (gs *getStream) Unwrap() http.ResponseWriter { return gs.w }

// WriteHeader opens the stream to the adapter's events when mcp-go answers
// the GET with an event stream: it asks proxies not to buffer it, writes
// again what a resumed stream missed, and starts the keep-alives.
func (gs *getStream) WriteHeader(code int) {
	var live map[string]bool
	if gs.after != "" && gs.subscribed != nil {
		// Asked before gs.mu: the registry's lock is never taken under it.
		live = gs.subscribed(gs.sessionID)
	}
	gs.mu.Lock()
	mediaType, _, _ := mime.ParseMediaType(gs.w.Header().Get("Content-Type"))
	opened := code == http.StatusOK && mediaType == "text/event-stream" && !gs.open && !gs.closed
	gs.open = gs.open || opened
	if opened {
		gs.w.Header().Set("X-Accel-Buffering", "no")
	}
	gs.w.WriteHeader(code)
	if opened {
		if gs.after != "" {
			gs.replayLocked(live)
		}
		if gs.keepAliveEvery > 0 {
			gs.keepAlive = time.AfterFunc(gs.keepAliveEvery, gs.keepStreamAlive)
		}
	}
	gs.mu.Unlock()
	if opened {
		gs.onOpen(gs) // which aborts a stream opened after Close
		gs.mu.Lock()
		if !gs.closed {
			gs.primeLocked()
		}
		gs.mu.Unlock()
	}
}

// primeLocked begins the stream with an event that has an id and no data,
// as the transport advises: clients keep the id, dispatch nothing, and can
// resume from it a stream that breaks before its first notification. The
// event is stored, empty, so that the store knows the id. gs.mu is held.
func (gs *getStream) primeLocked() {
	if gs.store == nil {
		return
	}
	id, err := gs.store.StoreEvent(context.Background(), gs.sessionID, getEvents, nil)
	if err != nil {
		return // the stream goes on, as one that cannot be resumed yet
	}
	_ = gs.writeEventLocked(id, nil)
}

// keepStreamAlive writes an SSE comment, which clients ignore, into a
// stream that was quiet for keepAliveEvery, between events, and waits for
// the next quiet spell.
func (gs *getStream) keepStreamAlive() {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.closed {
		return
	}
	if !gs.midEvent {
		err := gs.bounded(func() error {
			if err := writeAll(gs.w, keepAliveComment); err != nil {
				return err
			}
			return http.NewResponseController(gs.w).Flush()
		})
		if err != nil {
			gs.closeLocked()
			return
		}
	}
	gs.keepAlive.Reset(gs.keepAliveEvery)
}

// keepAliveComment is the SSE comment that keeps a quiet stream open.
var keepAliveComment = []byte(": keep-alive\n\n")

// wroteLocked notes that the stream just carried bytes: the keep-alive
// waits for a quiet spell from now. gs.mu is held.
func (gs *getStream) wroteLocked() {
	if gs.keepAlive != nil {
		gs.keepAlive.Reset(gs.keepAliveEvery)
	}
}

// Write passes mcp-go's bytes on and notes whether they end an event.
func (gs *getStream) Write(p []byte) (int, error) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var n int
	err := gs.bounded(func() (err error) {
		n, err = gs.w.Write(p)
		return err
	})
	if n > 0 {
		gs.noteWritten(p[:n])
		gs.wroteLocked()
	}
	if err != nil {
		gs.closeLocked()
	}
	return n, err
}

// noteWritten updates midEvent: an event ends with a blank line.
func (gs *getStream) noteWritten(p []byte) {
	if len(p) >= 2 {
		gs.tail = [2]byte{p[len(p)-2], p[len(p)-1]}
	} else {
		gs.tail = [2]byte{gs.tail[1], p[0]}
	}
	gs.midEvent = gs.tail != [2]byte{'\n', '\n'}
	if !gs.midEvent {
		gs.cond.Broadcast()
	}
}

func (gs *getStream) closeLocked() {
	gs.closed = true
	if gs.keepAlive != nil {
		gs.keepAlive.Stop()
	}
	gs.cond.Broadcast()
}

var errStreamClosed = errors.New("the GET stream has closed")

// writeEvent writes msg as one event of the stream and flushes it (see
// writeEvents).
func (gs *getStream) writeEvent(msg []byte, logger *slog.Logger) error {
	return gs.writeEvents([][]byte{msg}, logger)
}

// writeEvents writes msgs as events of the stream, after any event mcp-go
// is in the middle of writing, each with the id the event store gives it
// (none when the store fails, which is logged), in one write and one
// flush: a session told of several changes at once costs the server one
// system call and the client one read, not one each. It fails, and the
// stream closes for good, when the stream has ended or the write fails;
// which of the events reached the client is then unknown.
func (gs *getStream) writeEvents(msgs [][]byte, logger *slog.Logger) error {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for gs.midEvent && !gs.closed {
		gs.cond.Wait()
	}
	if gs.closed || !gs.open {
		return errStreamClosed
	}
	buf := eventBuffers.Get().(*[]byte)
	ev := (*buf)[:0]
	for _, msg := range msgs {
		ev = appendEvent(ev, gs.storeLocked(msg, logger), msg)
	}
	err := gs.writeLocked(ev)
	if cap(ev) <= maxKeptEventBuffer {
		*buf = ev
		eventBuffers.Put(buf)
	}
	return err
}

// storeLocked keeps msg in the event store, for a client that resumes,
// and returns its id; "" when there is no store or it failed (logged).
func (gs *getStream) storeLocked(msg []byte, logger *slog.Logger) string {
	if gs.store == nil {
		return ""
	}
	id, err := gs.store.StoreEvent(context.Background(), gs.sessionID, getEvents, msg)
	if err != nil {
		logger.Error("adapter: storing a notification for resumption failed; it goes without an id", "error", err)
		return ""
	}
	return id
}

// eventBuffers are the buffers writeEvents frames events in, reused; one
// that grew beyond maxKeptEventBuffer is left to the collector.
var eventBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxKeptEventBuffer = 64 << 10

// appendEvent appends msg framed as one event with id ("" for none).
func appendEvent(dst []byte, id string, msg []byte) []byte {
	if strings.ContainsAny(id, "\r\n") {
		id = "" // a store's id that would end the line: the event goes without
	}
	if id != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, id...)
		dst = append(dst, '\n')
	}
	if len(msg) > 0 {
		dst = append(dst, "event: message\n"...)
	}
	dst = append(dst, "data: "...)
	dst = append(dst, msg...)
	return append(dst, "\n\n"...)
}

// writeEventLocked writes msg as one event with id ("" for none), and
// flushes it. gs.mu is held, between events.
func (gs *getStream) writeEventLocked(id string, msg []byte) error {
	return gs.writeLocked(appendEvent(make([]byte, 0, len(msg)+len(id)+32), id, msg))
}

// writeLocked writes ev, whole events, and flushes them. gs.mu is held,
// between events.
func (gs *getStream) writeLocked(ev []byte) error {
	err := gs.bounded(func() error {
		if err := writeAll(gs.w, ev); err != nil {
			return err
		}
		return http.NewResponseController(gs.w).Flush()
	})
	if err != nil {
		gs.closeLocked()
		return err
	}
	gs.wroteLocked()
	return nil
}

// bounded runs write, a write into the stream, within gs.timeout. A client
// that stops reading would block the write, and with it every other
// (they take turns under mu) and the handler's return (finish waits for
// the lock), for as long as the connection lasts: the adapter's
// notifications to the session's next stream among them, and Close. The
// deadline bounds each write, mcp-go's as much as the adapter's; the
// stream then fails, and what the adapter had to say waits for the
// client's next stream. Servers that cannot set a deadline still work.
// gs.mu is held.
func (gs *getStream) bounded(write func() error) error { return gs.writes.do(gs.w, gs.timeout, write) }

// streamWriteTimeout bounds one write into a GET stream.
const streamWriteTimeout = 30 * time.Second

// closeWriteGrace bounds a write into a GET stream once Close has begun,
// where streamWriteTimeout did: Close's first step waits for the writes
// under way, and a client that reads takes an event in far less.
const closeWriteGrace = time.Second

// abort makes the write under way, if any, fail now, and the next ones
// refuse (Close).
func (gs *getStream) abort() { gs.writes.abort(gs.w) }

// shortenDeadline bounds the write under way, if any, and the next ones by
// closeWriteGrace (Close).
func (gs *getStream) shortenDeadline() { gs.writes.shortenDeadline(gs.w, closeWriteGrace) }

// finish closes the stream when the handler returns: its writer is no
// longer the adapter's to use.
func (gs *getStream) finish() {
	gs.mu.Lock()
	gs.closeLocked()
	gs.mu.Unlock()
}

// serveGet serves a legacy GET through next with its writer wrapped, so
// that the registry can deliver on the stream once mcp-go opens it.
func (a *Adapter) serveGet(w http.ResponseWriter, r *http.Request, next http.Handler, store server.EventStore, keepAlive time.Duration) {
	id := r.Header.Get(server.HeaderKeySessionID)
	f, canFlush := w.(http.Flusher)
	if id == "" || !canFlush || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		// No session to deliver to, no stream mcp-go would serve, or a
		// client of the era without GET streams (mcp-go answers 405).
		next.ServeHTTP(w, r)
		return
	}
	r, after, catchUp := resumeFrom(r, id, store)
	gs := newGetStream(w, f, id, getStreamConfig{
		store:          store,
		keepAliveEvery: keepAlive,
		timeout:        a.live.streamWriteTimeout,
		onOpen:         a.live.attachStream,
		subscribed:     a.live.subscribedURIs,
	})
	gs.after, gs.catchUp = after, catchUp
	// Deferred, so that a handler that panics (http.ErrAbortHandler) leaves
	// no keep-alive, and no stream the registry delivers to, writing into
	// the response net/http takes back.
	defer a.live.detachStream(gs)
	defer gs.finish()
	next.ServeHTTP(flushingGetStream{gs}, r)
}

// appendNotification appends n encoded as the data of an event, as
// json.Marshal encodes it. The notifications of legacy subscriptions, a
// URI and nothing else, take a path that allocates nothing.
func appendNotification(dst []byte, n mcp.JSONRPCNotification) ([]byte, error) {
	if uri, ok := plainResourceUpdated(n); ok {
		return appendPlainUpdated(dst, uri), nil
	}
	b, err := json.Marshal(n)
	return append(dst, b...), err
}

// appendURIUpdated appends the notifications/resources/updated of uri,
// with no other params, as appendNotification does.
func appendURIUpdated(dst []byte, uri string) ([]byte, error) {
	if plainURI(uri) {
		return appendPlainUpdated(dst, uri), nil
	}
	return appendNotification(dst, resourceUpdated(mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}}))
}

// appendPlainUpdated appends the notifications/resources/updated of uri, a
// plainURI, as encoding/json encodes it.
func appendPlainUpdated(dst []byte, uri string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"`...)
	for i := 0; i < len(uri); i++ {
		switch c := uri[i]; c {
		case '<', '>', '&':
			// As encoding/json escapes them for HTML.
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, `"}}`...)
}

const hexDigits = "0123456789abcdef"

// plainResourceUpdated returns the URI of n when n is a
// notifications/resources/updated whose params are that URI alone, and
// the URI is printable ASCII without a quote or a backslash, which
// appendNotification writes as encoding/json does.
func plainResourceUpdated(n mcp.JSONRPCNotification) (string, bool) {
	if n.JSONRPC != mcp.JSONRPC_VERSION || n.Method != string(mcp.MethodNotificationResourceUpdated) ||
		len(n.Params.Meta) != 0 || len(n.Params.AdditionalFields) != 1 {
		return "", false
	}
	uri, ok := n.Params.AdditionalFields["uri"].(string)
	return uri, ok && plainURI(uri)
}

// plainURI reports whether uri is printable ASCII without a quote or a
// backslash, which appendPlainUpdated writes as encoding/json does.
func plainURI(uri string) bool {
	for i := 0; i < len(uri); i++ {
		if c := uri[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// httpEdgeKey marks the context of a request served through HTTPHandler,
// whose legacy subscriptions are delivered on the session's GET stream.
type httpEdgeKey struct{}

func withHTTPEdge(ctx context.Context) context.Context {
	return context.WithValue(ctx, httpEdgeKey{}, true)
}

func viaHTTPEdge(ctx context.Context) bool {
	v, _ := ctx.Value(httpEdgeKey{}).(bool)
	return v
}

// getStreams are the open GET streams of the sessions that HTTPHandler
// serves, by session ID. A client may open several; the newest is used.
type getStreams struct {
	mu sync.Mutex
	m  map[string][]*getStream
	// shortened and aborted: Close has shortened, then aborted, every stream;
	// a stream that opens after it is shortened or aborted as it opens, as
	// if it had been open then.
	shortened, aborted bool
}

func (s *getStreams) add(gs *getStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.aborted:
		gs.abort()
	case s.shortened:
		gs.shortenDeadline()
	}
	if s.m == nil {
		s.m = make(map[string][]*getStream)
	}
	s.m[gs.sessionID] = append(s.m[gs.sessionID], gs)
}

func (s *getStreams) remove(gs *getStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := slices.DeleteFunc(s.m[gs.sessionID], func(x *getStream) bool { return x == gs })
	if len(list) == 0 {
		delete(s.m, gs.sessionID)
		return
	}
	s.m[gs.sessionID] = list
}

// newest returns the stream of session id opened last, nil when none is
// open.
func (s *getStreams) newest(id string) *getStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.m[id]
	if len(list) == 0 {
		return nil
	}
	return list[len(list)-1]
}

// shortenAllDeadlines shortens the deadline of every stream, and those that open from now on (Close).
func (s *getStreams) shortenAllDeadlines() { s.forAll(&s.shortened, (*getStream).shortenDeadline) }

// abortAll aborts every stream, and those that open from now on (Close).
func (s *getStreams) abortAll() { s.forAll(&s.aborted, (*getStream).abort) }

// forAll applies f to every stream open, and sets *mark, under the same
// lock, so that add applies it to those that open from now on.
func (s *getStreams) forAll(mark *bool, f func(*getStream)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*mark = true
	for _, list := range s.m {
		for _, gs := range list {
			f(gs)
		}
	}
}

// streamWrites bounds each write into a response by a write deadline (do),
// and lets Close cut short the writes into a long-lived one (a legacy GET
// stream, a subscriptions/listen event stream) whose client stopped
// reading, without waiting for the lock the blocked write holds:
// abort sets a past write deadline on the write under way, and every write
// after it refuses; shortenDeadline shortens the deadline of the write under way,
// and of those after it, to a grace.
//
// mu guards the deadlines, never a write: a write sets its deadline and
// marks itself under way under mu, then writes without it, so that Close
// changes the deadline of a blocked write at once, and never misses a
// write that is starting. Close sets a deadline only while a write is
// under way, so that it never reaches a connection the server has moved
// on to another request with. The writes into one stream take turns
// (their callers hold the stream's lock): one at most is under way.
type streamWrites struct {
	mu      sync.Mutex
	writing atomic.Bool // set under mu; read without it by tests
	aborted bool
	// grace, when not 0, bounds every write from now on (shortenDeadline).
	grace time.Duration
	// deadline is the write deadline of the write under way; zero for
	// none.
	deadline time.Time
}

var errStreamAborted = errors.New("the response stream was cut short by Close")

// do runs write, a write into w, within timeout (none when 0) or the
// grace shortenDeadline set, whichever is shorter, unless abort was called: then, or
// when abort comes while it runs, it fails.
func (s *streamWrites) do(w http.ResponseWriter, timeout time.Duration, write func() error) error {
	rc := http.NewResponseController(w)
	s.mu.Lock()
	if s.aborted {
		s.mu.Unlock()
		return errStreamAborted
	}
	if s.grace > 0 && (timeout == 0 || s.grace < timeout) {
		timeout = s.grace
	}
	if timeout > 0 {
		s.deadline = time.Now().Add(timeout)
		_ = rc.SetWriteDeadline(s.deadline)
	}
	s.writing.Store(true)
	s.mu.Unlock()

	// Deferred, so that a write that panics (a writer of a framework's,
	// net/http after a hijack) leaves no deadline on the connection and no
	// write marked under way, which Close would later reach.
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.writing.Store(false)
		if !s.deadline.IsZero() {
			s.deadline = time.Time{}
			_ = rc.SetWriteDeadline(time.Time{})
		}
	}()
	return write()
}

// boundAfterHandler bounds, by timeout, what net/http writes into w once
// the handler has returned: the tail of the response still in its buffer
// and a chunked body's last chunk, which a client that stopped reading
// would otherwise hold, with the connection, for as long as it lasts.
// net/http clears the deadline once the response is written. A hijacked
// connection is the hijacker's: it is left alone (a write of nothing tells).
func boundAfterHandler(w http.ResponseWriter, timeout time.Duration) {
	if _, err := w.Write(nil); errors.Is(err, http.ErrHijacked) {
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout))
}

// abort makes the write into w under way fail now, and those after it
// refuse.
func (s *streamWrites) abort(w http.ResponseWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	s.setDeadlineLocked(w, time.Now())
}

// shortenDeadline bounds the write into w under way, and every one after it, by
// grace from when it begins: Close's first step waits for the writes under
// way, and a client that reads takes an event in far less, where one that
// does not read would hold Close for the whole write timeout.
func (s *streamWrites) shortenDeadline(w http.ResponseWriter, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grace = grace
	s.setDeadlineLocked(w, time.Now().Add(grace))
}

// setDeadlineLocked brings the deadline of the write under way, if any,
// forward to t. s.mu is held.
func (s *streamWrites) setDeadlineLocked(w http.ResponseWriter, t time.Time) {
	if !s.writing.Load() || !s.deadline.IsZero() && s.deadline.Before(t) {
		return
	}
	s.deadline = t
	_ = http.NewResponseController(w).SetWriteDeadline(t)
}

// Resuming a GET stream.
//
// A client that loses its GET stream (a proxy timed out, a laptop slept)
// opens another with Last-Event-ID, the id of the last event it read. The
// adapter's notifications carry ids, kept in an event store
// (WithEventStore; an adapter's own NewEventStore by default), so the
// notifications written after that id, which the old connection may have
// swallowed, are written again at the head of the new stream, each URI
// once, before anything new. When the store does not know the id (too old,
// or the client's from another stream or server), the adapter cannot tell
// what the client missed: it notifies every subscription of the session,
// so that the client re-reads everything it watches.

// getEvents names the stream of the adapter's notifications among a
// session's streams in the event store.
const getEvents = "mcplive-get"

// DefaultEventsPerSession is how many events a store made by NewEventStore
// keeps per session: the default subscription cap, so that a session's
// whole burst of notifications stays resumable.
const DefaultEventsPerSession = DefaultSubscriptionCap

// NewEventStore returns an event store (mcp-go's server.EventStore) that
// keeps, per session, the last perSession events of all its streams, in
// memory, and forgets a session's when it is purged. perSession below 1 is
// DefaultEventsPerSession.
//
// HTTPHandler keeps the adapter's notifications in one by default, which
// is all a server needs whose only messages of its own on GET streams are
// mcp-go's pings. A server that sends more (sampling or elicitation
// requests, list changes, progress that turns answers into event streams)
// can have them survive a broken stream too, by giving mcp-go's
// Streamable HTTP server the same store, so that one store serves both:
//
//	events := adapter.NewEventStore(0)
//	httpSrv := server.NewStreamableHTTPServer(srv, server.WithEventStore(events))
//	mux.Handle("/mcp", a.HTTPHandler(httpSrv, adapter.WithEventStore(events)))
//
// That has a price: with a store, mcp-go keeps a goroutine and a stream for
// every session that has opened a GET stream until the session ends, a
// client's that vanished without DELETE included, until the idle timeout:
// about 10 KiB a session (docs/performance.md, "Abandoned sessions").
//
// A session's events cost about 250 bytes each: 16 KiB for a session that
// filled DefaultEventsPerSession. A Last-Event-ID older than what the store
// keeps is unknown to it (server.ErrUnknownEventID).
func NewEventStore(perSession int) server.EventStore {
	if perSession < 1 {
		perSession = DefaultEventsPerSession
	}
	return &eventStore{perSession: perSession, sessions: map[string]*eventLog{}}
}

// eventStore is NewEventStore's store: per session, a ring of its last
// events, whose ids are a store-wide sequence, increasing.
type eventStore struct {
	perSession int

	mu       sync.Mutex
	seq      uint64
	sessions map[string]*eventLog
}

// eventLog is one session's events, oldest first from head, in a ring.
type eventLog struct {
	events []storedEvent
	head   int
}

type storedEvent struct {
	seq    uint64
	stream string
	msg    json.RawMessage
}

func (s *eventStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	msg := slices.Clone(message) // the caller may reuse its buffer
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.sessions[sessionID]
	if log == nil {
		log = &eventLog{}
		s.sessions[sessionID] = log
	}
	s.seq++
	ev := storedEvent{seq: s.seq, stream: streamID, msg: msg}
	if len(log.events) < s.perSession {
		log.events = append(log.events, ev)
	} else {
		log.events[log.head] = ev
		log.head = (log.head + 1) % len(log.events)
	}
	return strconv.FormatUint(ev.seq, 10), nil
}

func (s *eventStore) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	seq, err := strconv.ParseUint(lastEventID, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: %.64q", server.ErrUnknownEventID, lastEventID)
	}
	s.mu.Lock()
	var stream string
	var after []storedEvent
	if log := s.sessions[sessionID]; log != nil {
		n := len(log.events)
		found := false
		for i := range n {
			ev := log.events[(log.head+i)%n]
			switch {
			case ev.seq == seq:
				stream, found = ev.stream, true
			case found && ev.stream == stream:
				after = append(after, ev)
			}
		}
		if !found {
			stream = ""
		}
	}
	s.mu.Unlock()
	if stream == "" {
		return "", fmt.Errorf("%w: %.64q", server.ErrUnknownEventID, lastEventID)
	}
	for _, ev := range after {
		if err := send(strconv.FormatUint(ev.seq, 10), slices.Clone(ev.msg)); err != nil {
			return "", err
		}
	}
	return stream, nil
}

func (s *eventStore) PurgeSession(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionID)
	return nil
}

// resumeFrom decides how the GET r of session id resumes: from Last-Event-ID
// when the store knows it as one of the adapter's events (the request mcp-go
// sees then has no Last-Event-ID: the stream is new to mcp-go); not at all
// without Last-Event-ID; else with a catch-up, every subscription notified,
// the id passed on to mcp-go only if it is one of mcp-go's own.
func resumeFrom(r *http.Request, id string, store server.EventStore) (_ *http.Request, after string, catchUp bool) {
	last := r.Header.Get("Last-Event-ID")
	if last == "" || store == nil {
		return r, "", false
	}
	stream, err := store.ReplayEventsAfter(r.Context(), id, last, func(string, json.RawMessage) error { return nil })
	if err == nil && stream != getEvents {
		return r, "", true // mcp-go's: it resumes its own
	}
	r = r.Clone(r.Context())
	r.Header.Del("Last-Event-ID")
	if err != nil {
		return r, "", true
	}
	return r, last, false
}

// replayLocked writes again, at the head of the stream, the adapter's
// events after gs.after, the last event of each URI only, and only of the
// URIs in live, those the session still subscribes: an unsubscribe since
// the event was written ended the subscription, and no notification of it
// is handed over after that (conn.go). gs.mu is held.
func (gs *getStream) replayLocked(live map[string]bool) {
	type replayed struct {
		id  string
		msg json.RawMessage
	}
	var events []replayed
	_, err := gs.store.ReplayEventsAfter(context.Background(), gs.sessionID, gs.after, func(id string, msg json.RawMessage) error {
		if len(msg) > 0 { // not a stream's priming event
			events = append(events, replayed{id, msg})
		}
		return nil
	})
	if err != nil {
		gs.catchUp = true // gone since resumeFrom looked
		return
	}
	last := map[string]int{}
	for i, ev := range events {
		var n struct {
			Params struct {
				URI string `json:"uri"`
			} `json:"params"`
		}
		_ = json.Unmarshal(ev.msg, &n)
		last[n.Params.URI] = i
	}
	for i, ev := range events {
		var n struct {
			Params struct {
				URI string `json:"uri"`
			} `json:"params"`
		}
		_ = json.Unmarshal(ev.msg, &n)
		if last[n.Params.URI] != i || !live[n.Params.URI] {
			continue
		}
		if gs.writeEventLocked(ev.id, ev.msg) != nil {
			return
		}
	}
}
