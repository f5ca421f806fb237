package adapter

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// The debug page (DebugHandler): the commands, as Inspect reports them,
// and the live queries, as LiveQueries and LiveStats report them, kept up
// to date over server-sent events. The page is rendered by html/template,
// which escapes everything the application and its agents put in it
// (descriptions, arguments, read keys); its one script replaces the live
// section with the fragment each event carries, rendered by the same
// template. It loads nothing from elsewhere, and its Content-Security-Policy
// allows nothing else to run.

//go:embed debugpage/page.html debugpage/page.js debugpage/page.css
var debugAssets embed.FS

// Bounds of the debug page.
const (
	// debugMaxQueries bounds the rows of live queries a page shows; the
	// count of the others is shown.
	debugMaxQueries = 200
	// debugMaxReads bounds the read keys a row shows; the count of the
	// others is shown.
	debugMaxReads = 50
	// debugMaxStreams bounds the event streams one handler serves at once;
	// the next is refused with 503.
	debugMaxStreams = 8
	// debugThrottle is the least time between two events of a stream: the
	// changes within it make one event.
	debugThrottle = 250 * time.Millisecond
	// debugRefresh is how often a stream sends the page even when nothing
	// changed, which keeps "as of" true and finds clients that left.
	debugRefresh = 15 * time.Second
	// debugWriteTimeout bounds one event's write: a client that stopped
	// reading, its connection still open, would otherwise hold its stream
	// (and one of the debugMaxStreams places) for as long as the
	// connection lasts.
	debugWriteTimeout = 30 * time.Second
)

// DebugHandler returns an http.Handler that serves a page for people:
// every command (its template, or why it has none) and every live query
// (command, canonical arguments, subscribers, read keys, re-runs, last
// change), updated in place as the registry changes, without a reload.
// Mount it where only operators reach it, as you would net/http/pprof: it
// shows the arguments of every live query, which may be personal data.
// Over a loopback connection it answers 403 to a request whose Host is not
// a loopback name (localhost, 127.0.0.1, [::1]), as mcp-go's localhost
// protection does on /mcp: a page on another site whose name the attacker
// rebinds to 127.0.0.1 reaches a loopback listener from the operator's own
// browser, with its own name as Host. A reverse proxy on the same host
// must send a loopback Host. Off loopback, every Host passes: restrict who
// reaches the page there yourself.
//
//	mux.Handle("GET /debug/live", a.DebugHandler())
//
// The page follows changes over server-sent events (a GET to the same URL
// that accepts text/event-stream), at most four a second, from at most
// eight pages at once; each stream ends with its request, or when a
// client stops reading and an event cannot be written within 30 seconds.
// Pages show at most 200 live queries, and at most 50 read keys of each.
//
// A GET that accepts application/json (and not text/html first) gets the
// same data as one JSON document, for a script that gathers the
// instances of a fleet: the commands (CommandReport), the registry's
// LiveStats under "live.stats", its live queries (LiveQuery, with the
// count of read keys left out as "moreReads") under "live.queries", the
// count of queries left out as "live.more", and the time as "live.at".
// A field added to any of them appears on the page's data and here alike.
func (a *Adapter) DebugHandler() http.Handler {
	return newDebugHandler(a, debugThrottle, debugRefresh)
}

type debugHandler struct {
	a       *Adapter
	page    *template.Template
	script  template.JS
	style   template.CSS
	csp     string
	streams chan struct{} // a place per stream served
	// throttle and refresh are debugThrottle and debugRefresh, shorter in
	// tests.
	throttle, refresh time.Duration
	// writeTimeout is debugWriteTimeout, shorter in tests.
	writeTimeout time.Duration
}

func newDebugHandler(a *Adapter, throttle, refresh time.Duration) *debugHandler {
	script := mustAsset("debugpage/page.js")
	style := mustAsset("debugpage/page.css")
	return &debugHandler{
		a:    a,
		page: template.Must(template.ParseFS(debugAssets, "debugpage/page.html")),
		// The assets are the package's own, not input: trusted as is.
		script: template.JS(script),
		style:  template.CSS(style),
		csp: "default-src 'none'; script-src '" + sha256Source(script) + "'; style-src '" + sha256Source(style) +
			"'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		streams:      make(chan struct{}, debugMaxStreams),
		throttle:     throttle,
		refresh:      refresh,
		writeTimeout: debugWriteTimeout,
	}
}

func mustAsset(name string) string {
	b, err := debugAssets.ReadFile(name)
	if err != nil {
		panic("adapter: debug page asset " + name + ": " + err.Error()) // embedded: cannot happen
	}
	return string(b)
}

// sha256Source is a CSP source that allows one inline script or style.
func sha256Source(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

func (h *debugHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if reboundToLoopback(req) {
		http.Error(w, fmt.Sprintf("forbidden: a loopback connection naming host %q, not a loopback name (DNS rebinding?)", req.Host), http.StatusForbidden)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	accept := req.Header.Get("Accept")
	if req.Method == http.MethodGet && strings.Contains(accept, "text/event-stream") {
		h.stream(w, req)
		return
	}
	w.Header().Set("Vary", "Accept")
	view := pageView{
		Commands: h.a.Inspect().Commands,
		Live:     h.live(),
		Script:   h.script,
		Style:    h.style,
	}
	if wantsJSON(accept) {
		b, err := json.Marshal(view)
		if err != nil {
			h.a.logger.Error("adapter: encoding the debug page's data failed", "error", err)
			http.Error(w, "encoding the page's data failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
		return
	}
	var b bytes.Buffer
	err := h.page.Execute(&b, view)
	if err != nil {
		h.a.logger.Error("adapter: rendering the debug page failed", "error", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", h.csp)
	_, _ = w.Write(b.Bytes())
}

// pageView is what the page's template shows, and, as JSON, what the page
// answers a request for application/json.
type pageView struct {
	Commands []CommandReport `json:"commands"`
	Live     liveView        `json:"live"`
	Script   template.JS     `json:"-"`
	Style    template.CSS    `json:"-"`
}

// liveView is the live section: what each event replaces.
type liveView struct {
	Stats   LiveStats   `json:"stats"`
	Queries []queryView `json:"queries"`
	More    int         `json:"more"` // live queries not shown
	At      time.Time   `json:"at"`
}

type queryView struct {
	LiveQuery
	Arguments string `json:"-"`                   // the JSON, as text (LiveQuery's holds it as JSON)
	MoreReads int    `json:"moreReads,omitempty"` // read keys not shown
}

// wantsJSON reports whether an Accept header asks for application/json
// before, or rather than, text/html: a browser's asks for HTML first, a
// script's (curl -H 'Accept: application/json') for JSON.
func wantsJSON(accept string) bool {
	j, h := strings.Index(accept, "application/json"), strings.Index(accept, "text/html")
	return j >= 0 && (h < 0 || j < h)
}

func (h *debugHandler) live() liveView {
	v := liveView{Stats: h.a.LiveStats(), At: time.Now()}
	qs := h.a.LiveQueries()
	if len(qs) > debugMaxQueries {
		v.More = len(qs) - debugMaxQueries
		qs = qs[:debugMaxQueries]
	}
	v.Queries = make([]queryView, len(qs))
	for i, q := range qs {
		more := max(0, len(q.Reads)-debugMaxReads)
		q.Reads = q.Reads[:len(q.Reads)-more]
		v.Queries[i] = queryView{LiveQuery: q, Arguments: string(q.Arguments), MoreReads: more}
	}
	return v
}

// stream serves the debug page's event stream: a "live" event with the
// live section at once, then after each change of the registry (at most
// one per throttle) and every refresh. It runs in the request's goroutine
// and returns when the request ends or a write fails or takes longer than
// writeTimeout.
func (h *debugHandler) stream(w http.ResponseWriter, req *http.Request) {
	if !canFlush(w) {
		// Unflushed, the first event would reach the page only as the
		// stream ended, and the page would reconnect for ever. A status
		// that is not 200 makes EventSource give up instead.
		h.a.logger.Error("adapter: the debug page's stream needs a ResponseWriter that flushes; a handler in front of it hides http.Flusher (give its writer an Unwrap method)")
		http.Error(w, "live updates need a ResponseWriter that flushes: a handler in front of this page hides http.Flusher", http.StatusNotImplemented)
		return
	}
	select {
	case h.streams <- struct{}{}:
		defer func() { <-h.streams }()
	default:
		w.Header().Set("Retry-After", "10")
		http.Error(w, "too many debug pages follow the registry: close one", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	ctx := req.Context()
	wait := time.NewTimer(h.refresh)
	defer wait.Stop()
	var buf bytes.Buffer
	for {
		changed := h.a.LiveChanged() // before the state is read: no change falls between
		buf.Reset()
		if err := h.page.ExecuteTemplate(&buf, "live", h.live()); err != nil {
			h.a.logger.Error("adapter: rendering the debug page failed", "error", err)
			return
		}
		// A write deadline, since a client that stops reading blocks the
		// write, where ctx cannot end it. (A ResponseWriter that cannot
		// take a deadline writes without one.)
		_ = rc.SetWriteDeadline(time.Now().Add(h.writeTimeout))
		if _, err := w.Write(sseEvent("live", buf.Bytes())); err != nil || rc.Flush() != nil {
			return // the client left, or stopped reading
		}
		_ = rc.SetWriteDeadline(time.Time{})
		wait.Reset(h.refresh)
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
			continue
		case <-changed:
		}
		// Let the changes of a burst gather into one event.
		wait.Reset(h.throttle)
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
	}
}

// sseEvent frames data as one server-sent event of the given name: a data
// line per line of data. A carriage return would end a line too, so it is
// written as the character reference the HTML means by it.
func sseEvent(name string, data []byte) []byte {
	data = bytes.ReplaceAll(data, []byte("\r"), []byte("&#13;"))
	var b bytes.Buffer
	b.Grow(len(data) + 64)
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteByte('\n')
	for line := range bytes.Lines(data) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\n")))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// canFlush reports whether http.ResponseController can flush w: whether w,
// or a writer its Unwrap methods lead to, flushes.
func canFlush(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case interface{ FlushError() error }, http.Flusher:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}
