package adapter

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves the adapter's server over stdio, reading newline-delimited
// JSON-RPC messages from in and writing them to out until ctx ends or in
// reaches EOF, as mcp-go's server.NewStdioServer(a.Server()).Listen(ctx, in,
// out) does, with opts applied to that stdio server. The difference is in the
// errors: every error response goes out with the adapter's exact error
// (-32602 with data.errors, resource-not-found with data.uri for the era, …)
// where mcp-go alone would send -32603 without data (see docs/transports.md).
//
// A server process serves its standard streams like this:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	if err := a.ServeStdio(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
//		log.Fatal(err)
//	}
//
// ServeStdio puts into ctx the box in which the adapter's OnError hook leaves
// the exact errors (mcp-go hands that context to every handler and hook), and
// wraps out so that each line mcp-go writes is one message it can look at:
// writes are gathered up to each newline, an error response whose id has an
// entry in the box is rewritten, and every other line is written unchanged.
// A line longer than 64 KiB is written through as it comes, unmodified,
// rather than held. A server.WithStdioContextFunc among opts must derive its
// context from the one it is given, or the box is lost.
//
// mcp-go v1.2.1 keeps one stdio session per process, shared by every stdio
// server, and Listen returns before the goroutine writing its notifications
// has ended: serve one stdio connection per process.
//
// ServeStdio returns what Listen returns: nil at the end of in, ctx's error
// when ctx ends, or the error of a failed read or write.
func (a *Adapter) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts ...server.StdioOption) error {
	ctx, box := withErrorBox(ctx)
	s := server.NewStdioServer(a.srv)
	for _, o := range opts {
		o(s)
	}
	lw := &lineRewriter{out: out, box: box}
	err := s.Listen(ctx, in, lw)
	lw.close()
	return err
}

// lineRewriter is the writer ServeStdio hands mcp-go. mcp-go writes each
// message, a line, with a single Write under a lock of its own, but the
// session's requests to the client (sampling, elicitation) are written
// without that lock, so the rewriter guards its state itself and gathers
// writes up to each newline.
type lineRewriter struct {
	mu  sync.Mutex
	out io.Writer
	box *errorBox

	line     []byte // the start of the current line, while held
	spilling bool   // the current line outgrew maxRewrite: pass it through
}

// Write consumes p. It returns len(p) unless the underlying writer fails.
func (w *lineRewriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if err := w.hold(p); err != nil {
				return n, err
			}
			return n + len(p), nil
		}
		seg := p[:i+1]
		var err error
		switch {
		case w.spilling:
			w.spilling = false
			err = writeAll(w.out, seg)
		case len(w.line) > 0:
			w.line = append(w.line, seg...)
			err = w.emit(w.line)
			w.line = w.line[:0]
		default:
			// The usual case: a whole line in one Write, not copied.
			err = w.emit(seg)
		}
		if err != nil {
			return n, err
		}
		n += len(seg)
		p = p[len(seg):]
	}
	return n, nil
}

// hold keeps the start of a line, or passes it on once the line outgrows
// maxRewrite.
func (w *lineRewriter) hold(p []byte) error {
	if w.spilling {
		return writeAll(w.out, p)
	}
	w.line = append(w.line, p...)
	if len(w.line) <= maxRewrite {
		return nil
	}
	discardEntry(w.box, w.line[:maxRewrite])
	held := w.line
	w.line, w.spilling = nil, true
	return writeAll(w.out, held)
}

// emit writes one whole line, rewritten when it is an error response with an
// entry in the box.
func (w *lineRewriter) emit(line []byte) error {
	msg := bytes.TrimRight(line, "\r\n")
	rw, ok := rewriteMessage(w.box, msg)
	if !ok {
		return writeAll(w.out, line)
	}
	out := make([]byte, 0, len(rw.msg)+1)
	out = append(out, rw.msg...)
	out = append(out, '\n')
	return writeAll(w.out, out)
}

// close writes a partial line still held, as it is.
func (w *lineRewriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 {
		_ = writeAll(w.out, w.line)
		w.line = nil
	}
}
