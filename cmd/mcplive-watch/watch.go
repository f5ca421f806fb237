package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// stampLayout is how a notification's time is printed: local time to the
// millisecond, with its offset.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// watcher is one run of the tool: what it heard, and the re-reads it owes.
type watcher struct {
	cfg    config
	out    *printer
	stderr io.Writer
	now    func() time.Time

	acks chan []string // the URIs a subscriptions/listen acknowledged

	mu      sync.Mutex
	heard   int               // notifications printed
	queue   []string          // URIs to re-read, in the order notified
	pending map[string]bool   // the URIs in queue
	last    map[string]string // what the last read of each URI showed
	known   map[string]bool   // the URIs subscribed to
	wake    chan struct{}     // a value when queue grew or the count was reached
	enough  chan struct{}     // closed at the -count'th notification
}

// watch subscribes as cfg says and prints notifications until ctx ends
// (nil), the count is reached (nil), or the watch fails.
func watch(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	w := &watcher{
		cfg: cfg, out: &printer{w: stdout}, stderr: stderr, now: time.Now,
		acks: make(chan []string, 1), pending: map[string]bool{}, last: map[string]string{},
		known: map[string]bool{}, wake: make(chan struct{}, 1), enough: make(chan struct{}),
	}
	for _, uri := range cfg.uris {
		w.known[uri] = true
	}

	// life is the connection's lifetime; it ends when watch returns, and
	// with it the listen stream, the GET stream and the re-reads.
	life, end := context.WithCancel(ctx)
	defer end()
	cn, err := dial(ctx, life, cfg, w.onNotification, stderr)
	if err != nil {
		return err
	}
	defer cn.close()

	caps := cn.c.GetServerCapabilities()
	if caps.Resources == nil || !caps.Resources.Subscribe {
		return fmt.Errorf("%s does not offer resource subscriptions: its capabilities (protocol %s) lack resources.subscribe", cn.server, cn.version)
	}

	var listenEnded <-chan error
	how := "resources/subscribe"
	if cn.stream != nil {
		how += " on the GET stream"
	}
	if mcp.IsModernProtocol(cn.version) {
		how = "subscriptions/listen"
		ended, stop, err := w.listen(life, cn)
		if err != nil {
			return err
		}
		defer stop()
		listenEnded = ended
	} else if err := w.subscribe(life, cn); err != nil {
		return err
	}

	if w.rereads() {
		for _, uri := range cfg.uris {
			w.reread(life, cn, uri)
		}
	}
	fmt.Fprintf(stderr, "mcplive-watch: watching %s on %s (protocol %s, %s); Ctrl-C stops\n",
		plural(len(cfg.uris), "URI"), cn.server, cn.version, how)

	readerDone := make(chan struct{})
	if w.rereads() {
		go func() {
			defer close(readerDone)
			w.rereadLoop(life, cn)
		}()
		defer func() { end(); <-readerDone }()
	} else {
		close(readerDone)
	}

	return w.follow(ctx, cn, listenEnded, readerDone)
}

// follow waits for the watch to end: Ctrl-C, enough notifications, the
// server gone or its listen ended; it follows the GET stream meanwhile.
func (w *watcher) follow(ctx context.Context, cn *conn, listenEnded <-chan error, readerDone <-chan struct{}) error {
	var streamChanged <-chan struct{}
	if cn.stream != nil {
		streamChanged = cn.stream.changed
	}
	for {
		select {
		case <-ctx.Done():
			return nil // Ctrl-C
		case <-w.enough:
			<-readerDone // each re-read is bounded by the timeout
			return nil
		case err := <-cn.exited:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case err := <-listenEnded:
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				return fmt.Errorf("%s ended the subscriptions/listen request: the subscriptions ended with it", cn.server)
			}
			return fmt.Errorf("the subscriptions/listen request failed: %v", err)
		case <-streamChanged:
			if err := w.followStream(ctx, cn); err != nil {
				return err
			}
		}
	}
}

// followStream checks the GET stream after it changed: when it ended it
// waits, within the timeout, for mcp-go's client to open it again on the
// same session, whose subscriptions are still there.
func (w *watcher) followStream(ctx context.Context, cn *conn) error {
	open, opens, why := cn.stream.state()
	if open {
		return nil
	}
	fmt.Fprintf(w.stderr, "mcplive-watch: the GET stream ended (%v); waiting up to %v for it to open again\n", why, w.cfg.timeout)
	timeout := time.NewTimer(w.cfg.timeout)
	defer timeout.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-cn.stream.changed:
			if open, again, _ := cn.stream.state(); open && again > opens {
				fmt.Fprintf(w.stderr, "mcplive-watch: the GET stream is open again\n")
				return nil
			}
		case <-timeout.C:
			_, _, why := cn.stream.state()
			return fmt.Errorf("the GET stream, on which %s sends notifications, ended and did not open again within %v (-timeout): %v", cn.server, w.cfg.timeout, why)
		}
	}
}

// listen opens one subscriptions/listen request for every URI and waits
// for its acknowledgement. ended receives what the request returned when it
// ends; stop ends it and waits for that.
func (w *watcher) listen(life context.Context, cn *conn) (ended <-chan error, stop func(), err error) {
	ctx, cancel := context.WithCancel(life)
	result := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		result <- cn.c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: w.cfg.uris})
	}()
	stop = func() {
		cancel()
		<-returned
	}
	timeout := time.NewTimer(w.cfg.timeout)
	defer timeout.Stop()
	select {
	case acked := <-w.acks:
		if refused := missing(w.cfg.uris, acked); len(refused) > 0 {
			stop()
			return nil, nil, w.refusal(life, cn, refused, "the server did not acknowledge")
		}
		return result, stop, nil
	case err := <-result:
		stop()
		if err == nil {
			err = errors.New("the server ended it before acknowledging it")
		}
		return nil, nil, fmt.Errorf("subscriptions/listen: %v", err)
	case <-timeout.C:
		stop()
		return nil, nil, fmt.Errorf("%s did not acknowledge subscriptions/listen within %v (-timeout)", cn.server, w.cfg.timeout)
	case <-life.Done():
		stop()
		return nil, nil, life.Err()
	}
}

// subscribe waits for the GET stream, on which a 2025-11-25 server sends
// notifications over HTTP, then sends resources/subscribe for each URI.
func (w *watcher) subscribe(life context.Context, cn *conn) error {
	if cn.stream != nil {
		if err := w.waitStream(life, cn); err != nil {
			return err
		}
	}
	var refused []string
	var why []string
	for _, uri := range w.cfg.uris {
		ctx, cancel := context.WithTimeout(life, w.cfg.timeout)
		err := cn.c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
		late := ctx.Err() != nil
		cancel()
		switch {
		case life.Err() != nil:
			return life.Err()
		case late:
			return fmt.Errorf("%s did not answer resources/subscribe %s within %v (-timeout)", cn.server, uri, w.cfg.timeout)
		case err != nil:
			refused = append(refused, uri)
			why = append(why, fmt.Sprintf("%s: %v", uri, err))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("the server refused resources/subscribe of %s:\n  %s", plural(len(refused), "URI"), strings.Join(why, "\n  "))
	}
	return nil
}

// waitStream waits until the GET stream is open.
func (w *watcher) waitStream(life context.Context, cn *conn) error {
	timeout := time.NewTimer(w.cfg.timeout)
	defer timeout.Stop()
	for {
		open, _, why := cn.stream.state()
		if open {
			return nil
		}
		if why != nil && strings.Contains(why.Error(), "answered the GET stream") {
			return fmt.Errorf("%s: %v", cn.server, why)
		}
		select {
		case <-cn.stream.changed:
		case <-timeout.C:
			if why == nil {
				why = errors.New("no answer")
			}
			return fmt.Errorf("%s did not open the GET stream, on which it would send notifications, within %v (-timeout): %v", cn.server, w.cfg.timeout, why)
		case <-life.Done():
			return life.Err()
		}
	}
}

// refusal is the error for URIs the server did not take. It reads each to
// say why: the read of a URI that does not exist, or does not convert,
// says so.
func (w *watcher) refusal(life context.Context, cn *conn, refused []string, what string) error {
	var lines []string
	for _, uri := range refused {
		_, err := w.read(life, cn, uri)
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s (a read of it answers: %v)", uri, err))
		} else {
			lines = append(lines, fmt.Sprintf("%s (a read of it succeeds: the server may cap subscriptions, or not watch this resource)", uri))
		}
	}
	return fmt.Errorf("%s %s:\n  %s", what, plural(len(refused), "URI"), strings.Join(lines, "\n  "))
}

// onNotification runs on the client's reading goroutine: it prints, queues
// and signals, and never sends a request.
func (w *watcher) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationResourceUpdated):
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		w.updated(uri, w.now())
	case string(mcp.MethodNotificationSubscriptionsAcknowledged):
		raw, err := json.Marshal(n.Params)
		var params mcp.SubscriptionsAcknowledgedParams
		if err == nil {
			err = json.Unmarshal(raw, &params)
		}
		if err != nil {
			fmt.Fprintf(w.stderr, "mcplive-watch: an acknowledgement it cannot parse: %s\n", raw)
			return
		}
		select {
		case w.acks <- params.Notifications.ResourceSubscriptions:
		default: // only the first one is waited for
		}
	}
}

// updated prints a notification that uri changed, heard at at, and queues
// a re-read of it.
func (w *watcher) updated(uri string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cfg.count > 0 && w.heard >= w.cfg.count {
		return
	}
	w.heard++
	w.out.printf("%s updated %s\n", at.Format(stampLayout), uri)
	if w.rereads() && w.known[uri] && !w.pending[uri] {
		w.pending[uri] = true
		w.queue = append(w.queue, uri)
	}
	if w.cfg.count > 0 && w.heard == w.cfg.count {
		close(w.enough)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) rereads() bool { return w.cfg.read || w.cfg.diff }

// rereadLoop re-reads the queued URIs, one at a time, until ctx ends, or
// the count is reached and nothing is left to read.
func (w *watcher) rereadLoop(ctx context.Context, cn *conn) {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			done := w.cfg.count > 0 && w.heard >= w.cfg.count
			w.mu.Unlock()
			if done {
				return
			}
			select {
			case <-w.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		uri := w.queue[0]
		w.queue = w.queue[1:]
		delete(w.pending, uri)
		w.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		w.reread(ctx, cn, uri)
	}
}

// reread reads uri and prints the result (-read) or what changed since the
// last read (-diff). The first read of a URI is printed whole either way.
func (w *watcher) reread(ctx context.Context, cn *conn, uri string) {
	text, err := w.read(ctx, cn, uri)
	if ctx.Err() != nil {
		return // stopping
	}
	at := w.now().Format(stampLayout)
	if err != nil {
		text = "error: " + err.Error()
	}
	w.mu.Lock()
	previous, seen := w.last[uri]
	w.last[uri] = text
	w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s read %s\n", at, uri)
	switch {
	case !w.cfg.diff || !seen:
		writeIndented(&b, text)
	case previous == text:
		b.WriteString("  (unchanged since the last read)\n")
	default:
		for _, line := range diffLines(previous, text) {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	w.out.printf("%s", b.String())
}

// read reads uri, within the timeout, and returns its contents as text: a
// JSON text indented, a blob by its size.
func (w *watcher) read(ctx context.Context, cn *conn, uri string) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.timeout)
	defer cancel()
	res, err := cn.c.ReadResource(rctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return "", fmt.Errorf("no answer within %v (-timeout)", w.cfg.timeout)
		}
		return "", err
	}
	var parts []string
	for i, content := range res.Contents {
		var part string
		if text, ok := mcp.AsTextResourceContents(content); ok {
			part = indentJSON(text.Text)
		} else if blob, ok := mcp.AsBlobResourceContents(content); ok {
			part = fmt.Sprintf("(a blob of %s, %d characters of base64)", cmp.Or(blob.MIMEType, "unknown type"), len(blob.Blob))
		} else {
			part = fmt.Sprintf("(a content of type %T)", content)
		}
		if len(res.Contents) > 1 {
			part = fmt.Sprintf("-- content %d of %d\n%s", i+1, len(res.Contents), part)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "(no contents)", nil
	}
	return strings.Join(parts, "\n"), nil
}

// indentJSON indents s when it is JSON, so that a changed field is a
// changed line; any other text is returned as it is.
func indentJSON(s string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		return s
	}
	return b.String()
}

// missing returns the URIs of want that got does not list.
func missing(want, got []string) []string {
	var out []string
	for _, uri := range want {
		if !slices.Contains(got, uri) {
			out = append(out, uri)
		}
	}
	return out
}

// writeIndented writes text to b, each line indented by two spaces.
func writeIndented(b *strings.Builder, text string) {
	for line := range strings.Lines(text) {
		b.WriteString("  ")
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteByte('\n')
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printer writes whole blocks to stdout, one at a time: notifications
// arrive on the client's goroutine, re-reads on another.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) printf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, a...)
}
