package adapter

import (
	"bytes"
	"net/http"
	"time"
)

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
