package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// HTTPHandler wraps mcp-go's Streamable HTTP server (or any handler that
// serves the adapter's server over Streamable HTTP) in the adapter's HTTP
// edge:
//
//	httpSrv := server.NewStreamableHTTPServer(srv)
//	mux.Handle("/mcp", a.HTTPHandler(httpSrv))
//
// Through it:
//
//   - every failed request answers the adapter's exact JSON-RPC error
//     (-32602 with data.errors, resource-not-found with data.uri for the
//     protocol era, the rate limit's -31429 with data.retryAfterMs), also
//     those mcp-go alone answers -32603 or -32600 without data;
//   - the notifications of a legacy session's subscriptions reach its GET
//     stream, none lost, and a write into any response that the client
//     does not read within 30 s fails, ending that request rather than
//     holding it;
//   - before mcp-go sees a request, a Host or Origin not allowed is
//     answered 403 (WithAllowedHosts, WithAllowedOrigins), a body over
//     WithMaxBodyBytes 413, a JSON-RPC batch 400, and a request that gives
//     a key twice -32602 naming it; a 2026-07-28 notification without the
//     protocol _meta gets it;
//   - with WithIdentity, a request that names a session another identity
//     opened is answered as one for an unknown session, and a 2026-07-28
//     notifications/cancelled cancels its sender's requests only; a
//     subscriptions/listen its client cancelled is not answered.
//
// The request's context carries the client's address (r.RemoteAddr), unless
// it has one already (middleware.RemoteAddrHandler in front), so that limits
// tell apart the clients of stateless Streamable HTTP. The writer handed to
// next implements http.Flusher exactly when the server's does, and Unwrap,
// so that http.ResponseController reaches the server's writer; bytes written
// to a hijacked connection bypass the edge. docs/transports.md says what
// differs without it, and docs/architecture.md how it works.
func (a *Adapter) HTTPHandler(next http.Handler, opts ...HTTPOption) http.Handler {
	if next == nil {
		panic("adapter: HTTPHandler(nil)")
	}
	cfg := newHTTPConfig(opts)
	events := a.live.useEventStore(cfg.events)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer boundAfterHandler(w, a.live.streamWriteTimeout)
		if !cfg.hostAllowed(r) {
			writeHTTPError(w, http.StatusForbidden, &rpcError{
				Code:    mcp.INVALID_REQUEST,
				Message: fmt.Sprintf("host %q is not allowed", r.Host),
			})
			return
		}
		if origin, ok := cfg.originAllowed(r); !ok {
			writeHTTPError(w, http.StatusForbidden, &rpcError{
				Code:    mcp.INVALID_REQUEST,
				Message: fmt.Sprintf("origin %q is not allowed", origin),
			})
			return
		}
		ctx := r.Context()
		if _, ok := middleware.RemoteAddrFrom(ctx); !ok && r.RemoteAddr != "" {
			ctx = middleware.ContextWithRemoteAddr(ctx, r.RemoteAddr)
		}
		ctx, box := withErrorBox(ctx)
		r = r.WithContext(withHTTPEdge(ctx))
		var who requester
		if a.cfg.identity != nil {
			var ok bool
			if who.identity, ok = a.requestIdentity(w, r); !ok {
				return
			}
			who.checked = true
		}
		switch r.Method {
		case http.MethodPost:
		case http.MethodGet:
			// A GET stream carries notifications and the server's
			// requests; the adapter delivers its own on it (httpstream.go).
			if who.admit(a, w, r, nil) {
				a.serveGet(w, r, next, events, cfg.keepAlive)
			}
			return
		case http.MethodDelete:
			if who.admit(a, w, r, nil) {
				next.ServeHTTP(w, r)
			}
			return
		default:
			next.ServeHTTP(w, r)
			return
		}
		a.servePost(w, r, next, &cfg, box, who)
	})
}

// requester is who sent a request, for the session checks (owners.go).
type requester struct {
	identity string
	// checked: the adapter has an identity function (WithIdentity), and
	// sessions belong to their identities.
	checked bool
}

// admit answers r, and returns false, when r names a session of another
// identity (admitSession); body is a POST's.
func (who requester) admit(a *Adapter, w http.ResponseWriter, r *http.Request, body []byte) bool {
	return !who.checked || a.admitSession(w, r, who.identity, body)
}

// servePost serves a POST through next: it refuses what mcp-go would
// mishandle (a body over the cap, a batch, a key given twice, a session
// of another identity), answers a 2026-07-28 notifications/cancelled
// (cancel.go), and hands next the edge that rewrites the response.
func (a *Adapter) servePost(w http.ResponseWriter, r *http.Request, next http.Handler, cfg *httpConfig, box *errorBox, who requester) {
	body, ok := readBody(w, r, cfg.maxBody)
	if !ok {
		return
	}
	if isBatch(body) {
		writeHTTPError(w, http.StatusBadRequest, errBatch)
		return
	}
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	if e := repeatedKeyError(body); e != nil {
		status := http.StatusOK
		if modern {
			status = modernHTTPStatus(e.Code)
		}
		writeHTTPResponse(w, status, errorResponseTo(body, e))
		return
	}
	if !who.admit(a, w, r, body) {
		return
	}
	e := &httpEdge{w: w, box: box, modern: modern, timeout: a.live.streamWriteTimeout, keepAliveEvery: cfg.keepAlive}
	e.events.box = box
	e.events.out = w
	if modern {
		if cancelled, ok := cancelledRequestID(body); ok {
			a.stateless.cancel(statelessKey{identity: who.identity, id: cancelled})
			w.WriteHeader(http.StatusAccepted) // as mcp-go answers a notification
			return
		}
		version := r.Header.Get(mcp.HeaderProtocolVersion)
		if fixed := withNotificationMeta(body, version); len(fixed) != len(body) {
			r.Body = io.NopCloser(bytes.NewReader(fixed))
			r.ContentLength = int64(len(fixed))
		}
		if id, listen := requestID(body); id != "" {
			// The client, and Close for a listen, can end it early.
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			f := &inFlight{cancel: cancel}
			if listen {
				lc := &listenCloser{id: listenRequestID(body), edge: e, cancel: cancel}
				ctx = withListenCloser(ctx, lc)
				f.edge = e
				// One update per subscription the listen can hold.
				e.events.awaitAck, e.events.maxHeld = true, a.cfg.subscriptionCap
			}
			defer a.stateless.add(statelessKey{identity: who.identity, id: id}, f)()
			r = r.WithContext(ctx)
		}
	} else if who.checked {
		requested, identity := r.Header.Get(server.HeaderKeySessionID), who.identity
		e.opened = func(h http.Header) { a.bindOpenedSession(h, requested, identity) }
	}
	var ew http.ResponseWriter = e
	if f, ok := w.(http.Flusher); ok {
		ew = &flushingHTTPEdge{e, f}
	}
	// Deferred, so that a handler that panics (http.ErrAbortHandler) leaves
	// no keep-alive writing into the response net/http takes back.
	defer e.finish()
	next.ServeHTTP(ew, r)
}

// httpState is what an httpEdge does with the bytes of its response.
type httpState int

const (
	undecided   httpState = iota // no status yet
	passThrough                  // written as they come
	holdJSON                     // an application/json body, held to rewrite
	rewriteSSE                   // a text/event-stream, rewritten event by event
	finished                     // answered by the adapter (finishListen): the rest is dropped
)

// httpEdge is the http.ResponseWriter that HTTPHandler hands the wrapped
// handler for a POST. mcp-go serialises its writes to one response, but its
// notification forwarder and request handler run on different goroutines, so
// the edge guards its own state.
type httpEdge struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	box    *errorBox
	modern bool // the request declared protocol version 2026-07-28 or later

	state  httpState
	status int    // holdJSON: the status not yet written
	body   []byte // holdJSON: the body not yet written
	events eventRewriter

	// writes into the response, which Close can cut short (abort).
	writes streamWrites
	// timeout bounds every write into the response, as it bounds those
	// into a GET stream (streamWriteTimeout): a subscriptions/listen stream
	// lasts as long as its client wants, and a client that stops reading
	// it would otherwise hold mcp-go's write, the request, and the
	// subscriptions with their places under the caps, for as long as the
	// connection lasts. A write that fails makes net/http cancel the
	// request's context, which ends the listen. A JSON body is bounded
	// alike: one larger than the connection's buffers, asked for by a
	// client that never reads it, would hold the request's goroutine and
	// the body for as long as the connection lasts (net/http has no write
	// bound of its own but the server's WriteTimeout, which would cut
	// every event stream).
	timeout time.Duration
	// keepAlive writes a comment into an event stream quiet for
	// keepAliveEvery (WithKeepAlive); nil until the response is one.
	keepAlive      *time.Timer
	keepAliveEvery time.Duration
	// handlerDone: the handler returned (finish); the writer is no longer
	// the edge's to write to.
	handlerDone bool
	// opened, when set, is told the response's header as the response is
	// decided: a session it opens becomes the requester's (owners.go).
	opened func(http.Header)
}

// boundedWrite runs write, a write into the response, within e.timeout,
// unless abort was called: then, or if abort comes while it runs, the
// write fails.
func (e *httpEdge) boundedWrite(write func() error) error {
	return e.writes.do(e.w, e.timeout, write)
}

// flushingHTTPEdge is an httpEdge over a writer that can flush: mcp-go
// upgrades a response to an event stream only when its writer is an
// http.Flusher.
type flushingHTTPEdge struct {
	*httpEdge
	f http.Flusher
}

// Flush writes what the edge holds and flushes the server's writer: a held
// JSON body is rewritten and written; of an event stream, every complete
// event has been written already and a partial one stays held until it ends.
func (e *flushingHTTPEdge) Flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state == undecided {
		// Flushing sends the header; decide what the body is first.
		e.writeHeader(http.StatusOK)
	}
	switch e.state {
	case holdJSON:
		e.commitJSON()
	case finished:
		return
	}
	_ = e.boundedWrite(func() error { e.f.Flush(); return nil })
}

// Header returns the server writer's header map: mcp-go sets the response's
// Content-Type there before WriteHeader, which is what the edge decides by.
func (e *httpEdge) Header() http.Header { return e.w.Header() }

// Unwrap returns the server's writer, for http.ResponseController.
func (e *httpEdge) Unwrap() http.ResponseWriter { return e.w }

// WriteHeader decides, by the response's Content-Type, what to do with the
// body. An application/json status is held with the body.
func (e *httpEdge) WriteHeader(code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writeHeader(code)
}

func (e *httpEdge) writeHeader(code int) {
	if code >= 100 && code < 200 {
		// Informational responses precede the real one; net/http writes
		// them at once, into a client that may not read.
		_ = e.boundedWrite(func() error { e.w.WriteHeader(code); return nil })
		return
	}
	if e.state == finished {
		return
	}
	if e.opened != nil {
		e.opened(e.w.Header())
		e.opened = nil
	}
	if e.state != undecided {
		if e.state != holdJSON {
			// Superfluous; let net/http say so as it would without us.
			e.w.WriteHeader(code)
		}
		return
	}
	mediaType, _, _ := mime.ParseMediaType(e.w.Header().Get("Content-Type"))
	switch mediaType {
	case "application/json":
		e.state, e.status = holdJSON, code
	case "text/event-stream":
		e.state = rewriteSSE
		e.w.Header().Set("X-Accel-Buffering", "no") // proxies: pass each event on as it comes
		e.w.WriteHeader(code)
		if e.keepAliveEvery > 0 {
			e.keepAlive = time.AfterFunc(e.keepAliveEvery, e.keepStreamAlive)
		}
	default:
		e.state = passThrough
		e.w.WriteHeader(code)
	}
}

// Write handles p as the state says: holds it, rewrites the events it ends,
// or passes it on.
func (e *httpEdge) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state == undecided {
		e.writeHeader(http.StatusOK)
	}
	switch e.state {
	case finished:
		return len(p), nil
	case holdJSON:
		e.body = append(e.body, p...)
		if len(e.body) > maxRewrite {
			discardEntry(e.box, e.body[:maxRewrite])
			e.w.WriteHeader(e.status)
			body := e.body
			e.body, e.state = nil, passThrough
			if err := e.boundedWrite(func() error { return writeAll(e.w, body) }); err != nil {
				return 0, err
			}
		}
		return len(p), nil
	case rewriteSSE:
		var n int
		err := e.boundedWrite(func() (err error) {
			n, err = e.events.Write(p)
			return err
		})
		if e.keepAlive != nil {
			e.keepAlive.Reset(e.keepAliveEvery)
		}
		return n, err
	}
	var n int
	err := e.boundedWrite(func() (err error) {
		n, err = e.w.Write(p)
		return err
	})
	return n, err
}

// abort makes a write into the event stream under way fail now, as a
// past deadline does, and those after it refuse: Close, once its context
// has ended, so that a client that stops reading its listen stream does
// not hold Close (and the answer it writes) for as long as the connection
// lasts.
func (e *httpEdge) abort() { e.writes.abort(e.w) }

// commitJSON writes the held status and body, with the error rewritten when
// the box has an entry for it. Callers hold e.mu.
func (e *httpEdge) commitJSON() {
	status, body := e.status, e.body
	e.body, e.state = nil, passThrough
	rest := bytes.TrimLeftFunc(body, unicode.IsSpace)
	start := len(body) - len(rest)
	msg := bytes.TrimRightFunc(rest, unicode.IsSpace)
	if rw, ok := rewriteMessage(e.box, msg); ok {
		// Keep the framing around the message (json.Encoder's newline).
		framed := make([]byte, 0, len(body)-len(msg)+len(rw.msg))
		framed = append(framed, body[:start]...)
		framed = append(framed, rw.msg...)
		framed = append(framed, body[start+len(msg):]...)
		body = framed
		e.w.Header().Del("Content-Length")
		if e.modern && status == modernHTTPStatus(rw.from) {
			status = modernHTTPStatus(rw.to)
		}
	}
	e.w.WriteHeader(status)
	if len(body) > 0 {
		// The client learns of a failed write from the broken connection;
		// there is no one left to tell here.
		_ = e.boundedWrite(func() error { return writeAll(e.w, body) })
	}
}

// finish writes whatever the edge still holds once the handler returned.
func (e *httpEdge) finish() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handlerDone = true
	if e.keepAlive != nil {
		e.keepAlive.Stop()
	}
	switch e.state {
	case holdJSON:
		e.commitJSON()
	case rewriteSSE:
		_ = e.boundedWrite(e.events.close)
	}
}

// keepStreamAlive writes an SSE comment, which clients ignore, into an
// event stream that was quiet for keepAliveEvery, between events, and waits
// for the next quiet spell; the stream ends with the handler (finish).
func (e *httpEdge) keepStreamAlive() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != rewriteSSE || e.handlerDone {
		return // answered by the adapter, or the writer is net/http's again
	}
	if e.events.between() {
		err := e.boundedWrite(func() error {
			if err := writeAll(e.w, keepAliveComment); err != nil {
				return err
			}
			return http.NewResponseController(e.w).Flush()
		})
		if err != nil {
			return // the request ends with the failed write
		}
	}
	e.keepAlive.Reset(e.keepAliveEvery)
}

// eventRewriter rewrites a text/event-stream event by event. It holds the
// bytes of the current event until the blank line that ends it, then writes
// the event, its data rewritten when it is an error response with an entry in
// the box. An event that outgrows maxRewrite is written as it comes from then
// on, until it ends. Events end with a blank line; lines end with LF or CRLF
// (mcp-go writes "event: message\ndata: {…}\n\n").
type eventRewriter struct {
	out io.Writer
	box *errorBox

	event     []byte // the current event's bytes, while held
	spilling  bool   // the current event outgrew maxRewrite: pass it through
	lineEmpty bool   // no byte but CR seen yet on the current line
	midLine   bool   // the current line has begun

	// awaitAck: a subscriptions/listen stream whose acknowledgement has not
	// gone by. Its resources/updated events (a URI whose version the client
	// named changed) are held until the acknowledgement, which a client
	// reads first: as many as the subscription cap (maxHeld), or
	// maxHeldUpdates if it is higher.
	awaitAck bool
	updates  [][]byte
	maxHeld  int
}

// maxHeldUpdates bounds the events a listen stream holds for its
// acknowledgement, unless the subscription cap is higher: one per
// subscription of the default cap.
const maxHeldUpdates = DefaultSubscriptionCap

// Markers of the two events awaitAck tells apart.
var (
	ackMarker     = []byte(`"method":"` + mcp.MethodNotificationSubscriptionsAcknowledged + `"`)
	updatedMarker = []byte(`"method":"` + mcp.MethodNotificationResourceUpdated + `"`)
)

// gate writes ev, a whole event, unless it is an update to hold until the
// acknowledgement; the acknowledgement releases those held after it.
func (r *eventRewriter) gate(ev []byte) error {
	if r.awaitAck {
		switch data := eventData(ev); {
		case bytes.Contains(data, ackMarker):
			r.awaitAck = false
			if err := writeAll(r.out, ev); err != nil {
				return err
			}
			return r.release()
		case bytes.Contains(data, updatedMarker) && len(r.updates) < max(r.maxHeld, maxHeldUpdates):
			r.updates = append(r.updates, slices.Clone(ev))
			return nil
		}
	}
	return writeAll(r.out, ev)
}

// release writes the updates held for the acknowledgement, once it has
// gone by.
func (r *eventRewriter) release() error {
	if r.awaitAck {
		return nil
	}
	for _, held := range r.updates {
		if err := writeAll(r.out, held); err != nil {
			return err
		}
	}
	r.updates = nil
	return nil
}

// Write consumes p. It returns len(p) unless the underlying writer fails.
func (r *eventRewriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i+1]
		}
		if err := r.segment(seg, i >= 0); err != nil {
			return n, err
		}
		n += len(seg)
		p = p[len(seg):]
	}
	return n, nil
}

// segment consumes seg, a part of one line; ends says seg ends the line.
func (r *eventRewriter) segment(seg []byte, ends bool) error {
	if !r.midLine {
		r.midLine, r.lineEmpty = true, true
	}
	content := seg
	if ends {
		content = seg[:len(seg)-1]
	}
	if len(bytes.Trim(content, "\r")) > 0 {
		r.lineEmpty = false
	}
	blank := ends && r.lineEmpty
	if ends {
		r.midLine = false
	}

	if r.spilling {
		if !blank {
			return writeAll(r.out, seg)
		}
		r.spilling = false
		if err := writeAll(r.out, seg); err != nil {
			return err
		}
		return r.release()
	}
	r.event = append(r.event, seg...)
	if blank {
		ev := r.event
		r.event = r.event[:0]
		return r.gate(rewriteEvent(r.box, ev))
	}
	if len(r.event) > maxRewrite {
		data := eventData(r.event)
		discardEntry(r.box, data)
		if r.awaitAck && bytes.Contains(data, ackMarker) {
			// The acknowledgement (it lists every URI of the listen),
			// too long to hold: what waits for it follows its end.
			r.awaitAck = false
		}
		held := r.event
		r.event, r.spilling = nil, true
		return writeAll(r.out, held)
	}
	return nil
}

// between reports whether the stream is between two events: nothing held,
// nothing passing through, no line begun.
func (r *eventRewriter) between() bool {
	return len(r.event) == 0 && !r.spilling && !r.midLine
}

// close writes a partial event still held, as it is.
func (r *eventRewriter) close() error {
	if len(r.event) == 0 {
		return nil
	}
	held := r.event
	r.event = nil
	return writeAll(r.out, held)
}

// eventData returns the data of an event: the values of its data lines,
// joined by LF, each without the one space that may follow "data:".
func eventData(ev []byte) []byte {
	var data []byte
	first := true
	for line := range bytes.Lines(ev) {
		line = bytes.TrimRight(line, "\r\n")
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v, _ = bytes.CutPrefix(v, []byte(" "))
		if !first {
			data = append(data, '\n')
		}
		data = append(data, v...)
		first = false
	}
	return data
}

// rewriteEvent returns ev with its data replaced by the rewritten error
// response, or ev itself. The new data takes the place of the first data
// line; the event's other fields (event, id) stay as they were.
func rewriteEvent(box *errorBox, ev []byte) []byte {
	rw, ok := rewriteMessage(box, eventData(ev))
	if !ok {
		return ev
	}
	out := make([]byte, 0, len(ev)+len(rw.msg))
	done := false
	for line := range bytes.Lines(ev) {
		if !bytes.HasPrefix(line, []byte("data:")) {
			out = append(out, line...)
			continue
		}
		if !done {
			out = append(out, "data: "...)
			out = append(out, rw.msg...)
			out = append(out, '\n')
			done = true
		}
	}
	return out
}

// finishListen answers the subscriptions/listen request this edge serves
// with its result, as mcp-go answers it when the client cancels: the
// acknowledgement and notifications already written stay, the result event
// ends the stream, and whatever mcp-go writes after it is dropped. When the
// response is not an event stream (mcp-go answered something else) or an
// event is half written, nothing is added and the stream just ends.
func (e *httpEdge) finishListen(id json.RawMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.handlerDone {
		return // the writer is net/http's again
	}
	switch e.state {
	case undecided:
		e.w.Header().Set("Content-Type", "text/event-stream")
		e.w.Header().Set("Cache-Control", "no-cache")
		e.w.WriteHeader(http.StatusOK)
	case rewriteSSE:
		if len(e.events.event) > 0 || e.events.spilling {
			e.state = finished
			return
		}
	default:
		return
	}
	e.state = finished
	msg, err := json.Marshal(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"id":      id,
		"result":  map[string]any{"resultType": mcp.ResultTypeComplete, "_meta": map[string]any{mcp.MetaKeySubscriptionID: id}},
	})
	if err != nil {
		return
	}
	ev := append(append([]byte("event: message\ndata: "), msg...), "\n\n"...)
	_ = e.boundedWrite(func() error {
		if err := writeAll(e.w, ev); err != nil {
			return err
		}
		return http.NewResponseController(e.w).Flush()
	})
}

// cancelListen ends a subscriptions/listen stream that its client
// cancelled: nothing more is written into the response, the result that
// would answer the listen included (cancel.go). Events already written
// stay; one half held is dropped, and the stream just ends.
func (e *httpEdge) cancelListen() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.handlerDone {
		e.state = finished
	}
}

// listenRequestID returns the id of body when it is a subscriptions/listen
// request, and nil otherwise. The byte test spares decoding every other
// body; a body with an escape may spell the method otherwise
// ("subscriptions\/listen"), and is decoded.
func listenRequestID(body []byte) json.RawMessage {
	if !bytes.Contains(body, []byte("subscriptions/listen")) && bytes.IndexByte(body, '\\') < 0 {
		return nil
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != string(mcp.MethodSubscriptionsListen) || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	return m.ID
}

// What HTTPHandler checks before mcp-go sees a request: the transport's
// security rules that mcp-go v1.2.1 leaves out (it checks the Host header
// of loopback connections, not the Origin, and reads any body whole), and
// the shapes of request body that mcp-go would answer badly.

// DefaultMaxBodyBytes is the largest request body HTTPHandler accepts
// unless WithMaxBodyBytes says otherwise: mcp-go's own default for its
// Streamable HTTP server, so that the two caps agree.
const DefaultMaxBodyBytes = server.DefaultMaxRequestBodyBytes

// An HTTPOption configures HTTPHandler.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	origins map[string]bool
	// hosts are the allowed Host headers (WithAllowedHosts), lower case;
	// nil for any.
	hosts   map[string]bool
	maxBody int64
	// events keeps GET streams' events (WithEventStore); nil for the
	// adapter's own.
	events server.EventStore
	// keepAlive is how long an event stream may be quiet before a comment
	// keeps it open (WithKeepAlive); 0 for never.
	keepAlive time.Duration
	badInput  []string // what the options got wrong, for the panic
}

// DefaultKeepAlive is how long an event stream through HTTPHandler may be
// quiet before a comment keeps it open, unless WithKeepAlive says otherwise.
const DefaultKeepAlive = 15 * time.Second

// WithKeepAlive sets how long an event stream (a GET stream, a
// subscriptions/listen stream) may be quiet before HTTPHandler writes an
// SSE comment into it, which clients ignore and which keeps proxies and
// load balancers from closing it as idle (DefaultKeepAlive by default). 0
// writes none.
func WithKeepAlive(d time.Duration) HTTPOption {
	return func(c *httpConfig) {
		if d < 0 {
			c.badInput = append(c.badInput, fmt.Sprintf("keep-alive %v: want 0 (none) or more", d))
			return
		}
		c.keepAlive = d
	}
}

// WithEventStore sets where HTTPHandler keeps the notifications it writes
// into legacy GET streams, with their event ids, so that a client that
// lost its stream and opens another with Last-Event-ID hears again what it
// missed. By default HTTPHandler keeps its own, made by NewEventStore,
// which says when to share one with mcp-go's server. Either way a
// session's events go when the session ends.
func WithEventStore(store server.EventStore) HTTPOption {
	return func(c *httpConfig) {
		if store == nil {
			c.badInput = append(c.badInput, "event store nil")
			return
		}
		c.events = store
	}
}

// WithAllowedOrigins lets browsers on the given origins use the server, in
// addition to those HTTPHandler always accepts: requests without an Origin
// header (clients that are not browsers), origins whose host is the
// request's own Host, and loopback origins (localhost, 127.0.0.0/8, ::1).
// Each origin is matched exactly, as the browser sends it: scheme, host and
// a port other than the scheme's default, without a path or a trailing
// slash ("https://app.example.com", "http://10.0.0.5:3000"). "null", the
// origin of sandboxed frames and local files, is accepted only when listed.
func WithAllowedOrigins(origins ...string) HTTPOption {
	return func(c *httpConfig) {
		for _, o := range origins {
			if o != "null" && !isOrigin(o) {
				c.badInput = append(c.badInput, fmt.Sprintf("allowed origin %q: want scheme://host[:port] and nothing else", o))
				continue
			}
			c.origins[o] = true
		}
	}
}

// WithAllowedHosts makes HTTPHandler answer 403, with a JSON-RPC error
// naming the host, any request whose Host header is not one of hosts: the
// names, and addresses, the server is reached by. A host given without a
// port matches it on any port ("mcp.example.com", "10.0.0.5"); with one,
// on that port only ("mcp.example.com:8443"). Case does not matter.
//
// The Origin check alone does not stop DNS rebinding on a server reachable
// by name from a victim's network, an intranet host: the attacker's page
// sends its own name as both Origin and Host, and an origin whose host is
// the request's own Host passes (so that a page the server serves itself
// can call it). Listing the server's names closes that; mcp-go's localhost
// protection does as much for loopback listeners. Without this option
// every Host passes.
func WithAllowedHosts(hosts ...string) HTTPOption {
	return func(c *httpConfig) {
		if c.hosts == nil {
			c.hosts = map[string]bool{}
		}
		for _, h := range hosts {
			name, _, err := net.SplitHostPort(h)
			if err != nil {
				name = h
			}
			if name == "" || strings.ContainsAny(h, "/?#@ ") {
				c.badInput = append(c.badInput, fmt.Sprintf("allowed host %q: want host or host:port and nothing else", h))
				continue
			}
			c.hosts[strings.ToLower(h)] = true
		}
	}
}

// hostAllowed applies the rule of WithAllowedHosts to r.
func (c *httpConfig) hostAllowed(r *http.Request) bool {
	if c.hosts == nil {
		return true
	}
	host := strings.ToLower(r.Host)
	if c.hosts[host] {
		return true
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		return false // a host:port entry was the only way to match
	}
	return c.hosts[name] || c.hosts["["+name+"]"] // an IPv6 address, given bracketed
}

// WithMaxBodyBytes sets the largest request body HTTPHandler accepts
// (DefaultMaxBodyBytes by default). A longer one is answered 413 Content
// Too Large with a JSON-RPC error, and no more of it is read than the
// limit.
//
// mcp-go's Streamable HTTP server bounds bodies too
// (server.WithMaxRequestBodyBytes, the same default): a body over the
// smaller cap is refused. To accept larger bodies, give both the same n:
//
//	const maxBody = 16 << 20
//	httpSrv := server.NewStreamableHTTPServer(srv, server.WithMaxRequestBodyBytes(maxBody))
//	mux.Handle("/mcp", a.HTTPHandler(httpSrv, adapter.WithMaxBodyBytes(maxBody)))
func WithMaxBodyBytes(n int64) HTTPOption {
	return func(c *httpConfig) {
		if n < 1 {
			c.badInput = append(c.badInput, fmt.Sprintf("max body bytes %d: want at least 1", n))
			return
		}
		c.maxBody = n
	}
}

func newHTTPConfig(opts []HTTPOption) httpConfig {
	c := httpConfig{origins: map[string]bool{}, maxBody: DefaultMaxBodyBytes, keepAlive: DefaultKeepAlive}
	for i, o := range opts {
		if o == nil {
			c.badInput = append(c.badInput, fmt.Sprintf("option %d is nil", i))
			continue
		}
		o(&c)
	}
	if len(c.badInput) > 0 {
		panic("adapter: HTTPHandler: " + strings.Join(c.badInput, "; "))
	}
	return c
}

// isOrigin reports whether s is a serialized origin: scheme://host[:port].
func isOrigin(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != "" && u.Path == "" && u.RawQuery == "" &&
		u.Fragment == "" && u.User == nil && !strings.HasSuffix(s, "/")
}

// originAllowed applies the rules of WithAllowedOrigins to r.
func (c *httpConfig) originAllowed(r *http.Request) (origin string, ok bool) {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return "", true
	}
	origin = origins[0]
	if len(origins) > 1 {
		return strings.Join(origins, ", "), false
	}
	if c.origins[origin] {
		return origin, true
	}
	u, err := url.Parse(origin)
	if err != nil || origin == "null" || !isOrigin(origin) {
		return origin, false
	}
	if strings.EqualFold(hostPort(u.Scheme, u.Host), hostPort(u.Scheme, r.Host)) {
		return origin, true
	}
	return origin, isLoopbackHost(u.Hostname())
}

// hostPort spells host with the default port of scheme removed, so that
// "example.com" and "example.com:443" compare equal for https.
func hostPort(scheme, host string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return host
	}
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return host
}

// reboundToLoopback reports whether r came over a loopback connection
// yet names a Host that is not loopback: what a page on another site sends
// once the attacker has rebound its name to 127.0.0.1 (DNS rebinding). It
// is the rule of mcp-go's localhost protection; a listener that is not
// loopback passes every Host.
func reboundToLoopback(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if ip, _, err := net.SplitHostPort(local.String()); err != nil || !isLoopbackHost(ip) {
		return false
	}
	name, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		name = strings.TrimSuffix(strings.TrimPrefix(r.Host, "["), "]") // no port
	}
	return !isLoopbackHost(name)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readBody reads a POST body, at most max bytes, and gives r a body that
// replays it. It answers, and reports false, when the body is too large or
// cannot be read.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, bool) {
	if r.ContentLength > max {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, bodyTooLarge(max))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, bodyTooLarge(max))
		} else {
			writeHTTPError(w, http.StatusBadRequest, &rpcError{Code: mcp.PARSE_ERROR, Message: "reading the request body failed"})
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, true
}

func bodyTooLarge(max int64) *rpcError {
	return &rpcError{
		Code:    mcp.INVALID_REQUEST,
		Message: fmt.Sprintf("request body too large: the limit is %d bytes", max),
		Data:    map[string]int64{"limit": max},
	}
}

// errBatch answers a JSON-RPC batch, which MCP's Streamable HTTP transport
// does not carry (and mcp-go would call "not valid json").
var errBatch = &rpcError{
	Code:    mcp.INVALID_REQUEST,
	Message: "JSON-RPC batches are not supported: send one message per request",
}

func isBatch(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n")
	return len(body) > 0 && body[0] == '['
}

// withNotificationMeta returns body with the request _meta that mcp-go
// demands of every 2026-07-28 message added to a client notification that
// lacks it; version is the request's MCP-Protocol-Version header. The
// schema of 2026-07-28 gives notifications an optional meta object without
// the request fields, and clients (go-sdk's notifications/cancelled, for
// one) send them without it: mcp-go answers 400, and a client may drop its
// session for that. Any other body is returned as it is.
func withNotificationMeta(body []byte, version string) []byte {
	if !bytes.Contains(body, []byte(`"notifications/`)) && !bytes.Contains(body, []byte(`\u`)) {
		// Not a notification (every client notification's method starts
		// so, unless JSON escapes spell it): the common request is not
		// decoded here at all.
		return body
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return body
	}
	if hasIDKey(msg) || msg["method"] == nil {
		return body
	}
	params := map[string]json.RawMessage{}
	if raw, ok := msg["params"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if json.Unmarshal(raw, &params) != nil {
			return body
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if json.Unmarshal(raw, &meta) != nil {
			return body
		}
	}
	if _, ok := meta[mcp.MetaKeyProtocolVersion]; ok {
		return body
	}
	meta[mcp.MetaKeyProtocolVersion], _ = json.Marshal(version)
	params["_meta"], _ = json.Marshal(meta)
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	if err != nil {
		return body
	}
	return out
}

// hasIDKey reports whether msg has a key that mcp-go reads as the id: it
// decodes with encoding/json, which matches "ID" and "Id" to it too. Such a
// message is a request, and re-encoding it here would add the _meta a
// request must bring itself, and keep one value of a key given twice where
// the request hook refuses it (rewrite.go).
func hasIDKey(msg map[string]json.RawMessage) bool {
	for k := range msg {
		if strings.EqualFold(k, "id") {
			return true
		}
	}
	return false
}

// writeHTTPError answers a request that never reaches mcp-go with a
// JSON-RPC error response (id null, as for a request that could not be
// read) and the given status.
func writeHTTPError(w http.ResponseWriter, status int, e *rpcError) {
	b, _ := json.Marshal(wireErrorResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: json.RawMessage("null"), Error: e})
	writeHTTPResponse(w, status, b)
}

// writeHTTPResponse answers with b, one JSON-RPC message, and status.
func writeHTTPResponse(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
