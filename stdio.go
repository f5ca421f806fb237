package adapter

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves the adapter's server over stdio, reading
// newline-delimited JSON-RPC messages from in and writing them to out until
// ctx ends or in reaches EOF, as mcp-go's
// server.NewStdioServer(a.Server()).Listen(ctx, in, out) does, with opts
// applied to that stdio server, and with the adapter's stdio edge: every
// failed request answers the adapter's exact JSON-RPC error, a line
// longer than DefaultMaxBodyBytes, a JSON-RPC batch or a request that gives
// a key twice is answered without reaching mcp-go, and a
// subscriptions/listen that its client cancelled (notifications/cancelled)
// is not answered, as the protocol asks.
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	if err := a.ServeStdio(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
//		log.Fatal(err)
//	}
//
// A server.WithStdioContextFunc among opts must derive its context from the
// one it is given. mcp-go keeps one stdio session per process: serve one
// stdio connection per process. Nothing is written to out once ServeStdio
// has returned.
//
// ServeStdio returns what Listen returns: nil at the end of in, ctx's error
// when ctx ends, or the error of a failed read or write.
func (a *Adapter) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts ...server.StdioOption) error {
	ctx, box := withErrorBox(ctx)
	s := server.NewStdioServer(a.srv)
	for _, o := range opts {
		o(s)
	}
	listens := &stdioListens{}
	lw := &lineRewriter{out: out, box: box, listens: listens}
	lr := &lineReader{in: bufio.NewReader(in), out: lw, listens: listens}
	err := s.Listen(ctx, lr, lw)
	lw.close()
	return err
}

// lineRewriter is the writer ServeStdio hands mcp-go. mcp-go writes each
// message, a line, with a single Write under a lock of its own, but the
// session's requests to the client (sampling, elicitation) are written
// without that lock, so the rewriter guards its state itself and gathers
// writes up to each newline.
type lineRewriter struct {
	mu      sync.Mutex
	out     io.Writer
	box     *errorBox
	listens *stdioListens // whose answers to leave out

	line     []byte // the start of the current line, while held
	spilling bool   // the current line outgrew maxRewrite: pass it through
	closed   bool   // ServeStdio returned: out is the caller's again
}

// Write consumes p. It returns len(p) unless the underlying writer fails.
// After close it drops p.
func (w *lineRewriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
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
// entry in the box, and not at all when it answers a cancelled listen.
func (w *lineRewriter) emit(line []byte) error {
	msg := bytes.TrimRight(line, "\r\n")
	if w.listens != nil && w.listens.drop(msg) {
		return nil
	}
	rw, ok := rewriteMessage(w.box, msg)
	if !ok {
		return writeAll(w.out, line)
	}
	out := make([]byte, 0, len(rw.msg)+1)
	out = append(out, rw.msg...)
	out = append(out, '\n')
	return writeAll(w.out, out)
}

// close writes a partial line still held, as it is, and ends the writes to
// out: mcp-go's goroutines that outlive Listen write on.
func (w *lineRewriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if len(w.line) > 0 {
		_ = writeAll(w.out, w.line)
		w.line = nil
	}
}

// maxStdioLine bounds a line ServeStdio reads, newline left out, as
// DefaultMaxBodyBytes bounds an HTTP body.
const maxStdioLine = DefaultMaxBodyBytes

// lineReader is the reader ServeStdio hands mcp-go. It passes on whole
// lines of in, and answers on out, instead of passing them, the lines that
// mcp-go would mishandle (see ServeStdio). mcp-go reads it from one
// goroutine at a time.
type lineReader struct {
	in      *bufio.Reader
	out     io.Writer     // the lineRewriter, which keeps lines whole
	listens *stdioListens // told of the listens and their cancellations

	line []byte // the line being gathered, at most maxStdioLine bytes
	next []byte // what mcp-go has yet to read of the last whole line
	skip bool   // the current line was refused: drop it up to its newline
	err  error  // in failed: the error after next
}

func (r *lineReader) Read(p []byte) (int, error) {
	for len(r.next) == 0 && r.err == nil {
		seg, err := r.in.ReadSlice('\n')
		if gerr := r.gather(seg); gerr != nil {
			return 0, gerr
		}
		if err != nil && err != bufio.ErrBufferFull {
			// What in cut short goes on as it is: mcp-go decides.
			r.next, r.line, r.err = r.line, r.line[len(r.line):], err
		}
	}
	n := copy(p, r.next)
	r.next = r.next[n:]
	if len(r.next) == 0 && r.err != nil {
		return n, r.err
	}
	return n, nil
}

// gather adds seg, a piece of in that ends at a newline or not at all, to
// the current line, or answers the line.
func (r *lineReader) gather(seg []byte) error {
	ended := len(seg) > 0 && seg[len(seg)-1] == '\n'
	if r.skip {
		r.skip = !ended
		return nil
	}
	size := len(r.line) + len(seg)
	if ended {
		size--
	}
	if size > maxStdioLine {
		// Only the start of the line is looked at, for its id.
		head := append(r.line, seg[:min(len(seg), maxRewrite)]...)
		r.line, r.skip = r.line[:0], !ended
		return r.refuse(head[:min(len(head), maxRewrite)], lineTooLong)
	}
	r.line = append(r.line, seg...)
	if !ended {
		return nil
	}
	if isBatch(r.line) {
		r.line = r.line[:0]
		return r.refuse(nil, errBatch)
	}
	if e := repeatedKeyError(r.line); e != nil {
		defer func() { r.line = r.line[:0] }()
		return r.refuse(r.line, e)
	}
	if r.listens != nil {
		r.listens.read(r.line)
	}
	r.next, r.line = r.line, r.line[:0]
	return nil
}

// refuse answers the message whose line starts with head with e, under the
// id head shows, or null. A response of the client's has its id in the
// client's requests' space: it is answered under null.
func (r *lineReader) refuse(head []byte, e *rpcError) error {
	return writeAll(r.out, append(errorResponseTo(head, e), '\n'))
}

// lineTooLong answers a line longer than maxStdioLine.
var lineTooLong = &rpcError{
	Code:    mcp.INVALID_REQUEST,
	Message: fmt.Sprintf("message too large: the limit is %d bytes a line", maxStdioLine),
	Data:    map[string]int64{"limit": maxStdioLine},
}
