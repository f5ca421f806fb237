package gosdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the client sent, as the server got it.
//
// go-sdk sends some messages on its own, off the caller's path: on
// 2026-07-28, Unsubscribe only cancels the context of the URI's
// subscriptions/listen request and returns, and a goroutine sends
// notifications/cancelled later. A test that writes right after Unsubscribe
// would race that goroutine, so it waits until the wire log shows the
// cancellation delivered. The log is also what a failing test prints: every
// message the client sent, with the HTTP status and the start of any reply
// that is not an event stream.
//
// Over HTTP the log taps the http.Client's RoundTripper. It must not wrap
// go-sdk's Connection there: the streamable connection learns the session's
// protocol version through an unexported method that a wrapper would hide,
// and would then never open its GET stream on 2025-11-25. The stdio
// connection has no such method, so there the log wraps the Connection.

// wireCap bounds the bytes of each body kept in the log.
const wireCap = 2 << 10

// wireEntry is one message the client sent.
type wireEntry struct {
	at     time.Duration // since the log began
	what   string        // "POST", "GET", "DELETE" or "stdio"
	method string        // the JSON-RPC method; "" for a response
	id     string        // the JSON-RPC id as JSON; "" for a notification
	// cancels is params.requestId of notifications/cancelled, as JSON.
	cancels string
	// resources is params.notifications.resourceSubscriptions of
	// subscriptions/listen.
	resources []string
	status    int         // the HTTP status; 0 on stdio
	header    http.Header // the HTTP request's headers; nil on stdio
	err       string      // the transport's error, if any
	body      string      // the message (at most wireCap bytes)
	reply     string      // the start of a reply that is not an event stream
}

func (e wireEntry) String() string {
	s := fmt.Sprintf("%8.3fs %-6s", e.at.Seconds(), e.what)
	if e.status != 0 {
		s += fmt.Sprintf(" %d", e.status)
	}
	if e.err != "" {
		s += " error: " + e.err
	}
	if e.method != "" && e.what == "recv" {
		s += " " + e.method
	}
	if e.body != "" {
		label := "sent:  "
		if e.what == "recv" {
			label = "heard: "
		}
		s += "\n           " + label + e.body
	}
	if e.reply != "" {
		s += "\n           reply: " + e.reply
	}
	return s
}

// wireLog is the ordered log of what the client sent. It is safe for
// concurrent use.
type wireLog struct {
	start time.Time

	mu      sync.Mutex
	entries []wireEntry
	added   chan struct{} // closed and replaced on every add
}

func newWireLog() *wireLog {
	return &wireLog{start: time.Now(), added: make(chan struct{})}
}

func (w *wireLog) add(e wireEntry) {
	e.at = time.Since(w.start)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries = append(w.entries, e)
	close(w.added)
	w.added = make(chan struct{})
}

// waitFor returns the first entry that match accepts, waiting for it until
// ctx ends.
func (w *wireLog) waitFor(ctx context.Context, match func(wireEntry) bool) (wireEntry, error) {
	seen := 0
	for {
		w.mu.Lock()
		for ; seen < len(w.entries); seen++ {
			if e := w.entries[seen]; match(e) {
				w.mu.Unlock()
				return e, nil
			}
		}
		added := w.added
		w.mu.Unlock()
		select {
		case <-added:
		case <-ctx.Done():
			return wireEntry{}, context.Cause(ctx)
		}
	}
}

// last returns the last entry that match accepts.
func (w *wireLog) last(match func(wireEntry) bool) (wireEntry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.entries) - 1; i >= 0; i-- {
		if match(w.entries[i]) {
			return w.entries[i], true
		}
	}
	return wireEntry{}, false
}

func (w *wireLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, e := range w.entries {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// parseMessage fills e's JSON-RPC fields from the message body.
func (e *wireEntry) parseMessage(body []byte) {
	e.body = clip(body)
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			RequestID     json.RawMessage `json:"requestId"`
			Notifications *struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return // a batch or garbage: the body says what it was
	}
	e.method, e.id, e.cancels = m.Method, string(m.ID), string(m.Params.RequestID)
	if n := m.Params.Notifications; n != nil {
		e.resources = n.ResourceSubscriptions
	}
}

func clip(b []byte) string {
	if len(b) > wireCap {
		return string(b[:wireCap]) + "…"
	}
	return string(b)
}

// httpTap is an http.RoundTripper that logs every request go-sdk makes.
type httpTap struct {
	base http.RoundTripper
	log  *wireLog
}

func (t *httpTap) RoundTrip(req *http.Request) (*http.Response, error) {
	e := wireEntry{what: req.Method, header: req.Header.Clone()}
	if req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			data, _ := io.ReadAll(io.LimitReader(body, 1<<20))
			body.Close()
			e.parseMessage(data)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		e.err = err.Error()
		t.log.add(e)
		return nil, err
	}
	e.status = resp.StatusCode
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Read the start of the reply for the log and hand go-sdk the
		// whole body unchanged.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, wireCap))
		e.reply = clip(head)
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	}
	t.log.add(e)
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// stdioTap is an mcp.Transport that logs every message its Connection
// writes.
type stdioTap struct {
	mcp.Transport
	log *wireLog
}

func (t *stdioTap) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tappedConn{Connection: conn, log: t.log}, nil
}

type tappedConn struct {
	mcp.Connection
	log *wireLog
}

// Write logs msg once it is written: from then on the server reads it
// before anything written later.
func (c *tappedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	e := wireEntry{what: "stdio"}
	if data, merr := jsonrpc.EncodeMessage(msg); merr == nil {
		e.parseMessage(data)
	}
	if err != nil {
		e.err = err.Error()
	}
	c.log.add(e)
	return err
}
