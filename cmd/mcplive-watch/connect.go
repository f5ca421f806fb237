package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// stopGrace is how long a stdio server may take to exit once its stdin is
// closed, and then once it is sent SIGTERM, before it is killed.
const stopGrace = 5 * time.Second

// conn is an initialized client and what the tool watches of its
// transport.
type conn struct {
	c       *client.Client
	version string // the protocol version the server and the client agreed on
	server  string // the URL, or the stdio command, for messages
	// exited receives, once, why a stdio server's process ended; nil over
	// HTTP.
	exited <-chan error
	// stream is the state of the session's GET stream, on which a
	// 2025-11-25 server sends notifications over HTTP; nil otherwise.
	stream *getStream
	// close ends the connection and everything it started, in bounded time.
	close func()
}

// dial connects to the server the configuration names and initializes a
// client on the protocol version it asks for. life is the connection's
// lifetime; onNotification gets every notification the server sends.
func dial(ctx, life context.Context, cfg config, onNotification func(mcp.JSONRPCNotification), stderr io.Writer) (*conn, error) {
	logger := slog.New(slog.DiscardHandler)
	if cfg.verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if len(cfg.command) > 0 {
		return dialStdio(ctx, life, cfg, onNotification, logger, stderr)
	}
	if cfg.protocol != protocolLegacy {
		cn, err := dialHTTP(ctx, life, cfg, false, onNotification, logger)
		if err != nil {
			return nil, err
		}
		if mcp.IsModernProtocol(cn.version) {
			return cn, nil
		}
		// A server that speaks only 2025-11-25 sends notifications on a
		// GET stream, which mcp-go's client opens only when it is made
		// for that version: connect again with one.
		cn.close()
		if cfg.protocol == protocolListen {
			return nil, fmt.Errorf("%s does not speak %s (it answered %s): use -protocol %s, or auto", cfg.endpoint, protocolListen, cn.version, protocolLegacy)
		}
	}
	return dialHTTP(ctx, life, cfg, true, onNotification, logger)
}

// clientOptions are the options of every client the tool makes.
func clientOptions(cfg config, legacy bool) []client.ClientOption {
	opts := []client.ClientOption{client.WithDiscoverTimeout(cfg.timeout)}
	switch {
	case legacy:
		opts = append(opts, client.WithProtocolVersion(protocolLegacy))
	case cfg.protocol != protocolAuto:
		opts = append(opts, client.WithProtocolVersion(cfg.protocol))
	}
	return opts
}

// initialize initializes c within the timeout and returns the protocol
// version agreed on.
func initialize(ctx context.Context, c *client.Client, cfg config) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "mcplive-watch", Version: "1"},
	}})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("no answer to initialize within %v (-timeout)", cfg.timeout)
		}
		return "", err
	}
	return res.ProtocolVersion, nil
}

// dialHTTP connects over Streamable HTTP. legacy makes a client for
// 2025-11-25 that keeps the session's GET stream open.
func dialHTTP(ctx, life context.Context, cfg config, legacy bool, onNotification func(mcp.JSONRPCNotification), logger *slog.Logger) (*conn, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.DialContext = (&net.Dialer{Timeout: cfg.timeout}).DialContext
	var rt http.RoundTripper = base
	if len(cfg.headers) > 0 {
		rt = withHeaders{base: base, headers: cfg.headers}
	}
	stream := &getStream{base: rt, changed: make(chan struct{}, 1)}
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(&http.Client{Transport: stream}),
		transport.WithHTTPLogger(logger),
	}
	if legacy {
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(cfg.endpoint, opts...)
	if err != nil {
		return nil, fmt.Errorf("bad URL %q: %v", cfg.endpoint, err)
	}
	c := client.NewClient(tr, clientOptions(cfg, legacy)...)
	c.OnNotification(onNotification)
	if err := c.Start(life); err != nil {
		return nil, fmt.Errorf("connect to %s: %v", cfg.endpoint, err)
	}
	cn := &conn{c: c, server: cfg.endpoint, close: func() {
		c.Close() // on 2025-11-25 it ends the session with a DELETE, bounded by mcp-go (5 s)
		base.CloseIdleConnections()
	}}
	if legacy {
		cn.stream = stream
	}
	if cn.version, err = initialize(ctx, c, cfg); err != nil {
		cn.close()
		return nil, fmt.Errorf("connect to %s: %v", cfg.endpoint, err)
	}
	return cn, nil
}

// withHeaders is a RoundTripper that sends the -header headers with every
// request: the POSTs, the GET stream and the DELETE that ends a session.
type withHeaders struct {
	base    http.RoundTripper
	headers http.Header
}

func (h withHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper leaves its request as it was
	for name, values := range h.headers {
		req.Header[name] = append(req.Header[name], values...)
	}
	return h.base.RoundTrip(req)
}

// getStream is the HTTP client's RoundTripper. It follows the GET stream on
// which a 2025-11-25 server sends notifications: mcp-go's client opens it
// in the background after initialize, reopens it when it ends, and says
// nothing of either.
type getStream struct {
	base http.RoundTripper

	mu    sync.Mutex
	open  bool
	opens int   // how many times the server answered a GET with 200
	err   error // why the last stream ended, or was refused
	// changed receives a value when open or err changes.
	changed chan struct{}
}

func (g *getStream) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if req.Method != http.MethodGet {
		return resp, err
	}
	switch {
	case err != nil:
		g.set(false, err)
	case resp.StatusCode == http.StatusOK:
		g.set(true, nil)
		resp.Body = &streamBody{ReadCloser: resp.Body, g: g}
	case resp.StatusCode == http.StatusMethodNotAllowed:
		g.set(false, fmt.Errorf("the server answered the GET stream with %s: on %s it has no way to send notifications", resp.Status, protocolLegacy))
	default:
		g.set(false, fmt.Errorf("the server answered the GET stream with %s", resp.Status))
	}
	return resp, err
}

func (g *getStream) set(open bool, err error) {
	g.mu.Lock()
	g.open, g.err = open, err
	if open {
		g.opens++
	}
	g.mu.Unlock()
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// state returns whether a GET stream is open, how many have opened, and
// why the last one ended.
func (g *getStream) state() (open bool, opens int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.opens, g.err
}

// streamBody is the body of an open GET stream: it tells the getStream
// when the stream ends.
type streamBody struct {
	io.ReadCloser
	g    *getStream
	once sync.Once
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		if err == io.EOF {
			err = errors.New("the server closed it")
		}
		b.once.Do(func() { b.g.set(false, err) })
	}
	return n, err
}

func (b *streamBody) Close() error {
	b.once.Do(func() { b.g.set(false, errors.New("the client closed it")) })
	return b.ReadCloser.Close()
}

// dialStdio starts the server command and speaks MCP on its stdin and
// stdout. Its stderr is passed through to stderr.
func dialStdio(ctx, life context.Context, cfg config, onNotification func(mcp.JSONRPCNotification), logger *slog.Logger, stderr io.Writer) (*conn, error) {
	name := strings.Join(cfg.command, " ")
	// Pipes of the tool's own rather than cmd's, so that waiting for the
	// process (to learn that it ended) does not close what the client
	// still reads.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(cfg.command[0], cfg.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	// Wait returns this long after the process ended even if a process it
	// started still holds its stderr.
	cmd.WaitDelay = stopGrace
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start the server %q: %v", name, err)
	}
	done := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		close(done)
		if err == nil {
			err = errors.New("exit status 0")
		}
		exited <- fmt.Errorf("the server %q exited: %v", name, err)
	}()

	tr := transport.NewIO(outR, inW, nil)
	c := client.NewClient(tr, clientOptions(cfg, cfg.protocol == protocolLegacy)...)
	c.OnNotification(onNotification)
	stop := func() {
		c.Close() // closes the server's stdin: a stdio server exits then
		if !waitFor(done, stopGrace) {
			cmd.Process.Signal(syscall.SIGTERM)
			if !waitFor(done, stopGrace) {
				cmd.Process.Kill()
			}
		}
		<-done
		// Unblocks the client's reader if a process the server started
		// still holds the pipe.
		outR.Close()
	}
	if err := c.Start(life); err != nil {
		stop()
		return nil, fmt.Errorf("talk to the server %q: %v", name, err)
	}
	cn := &conn{c: c, server: fmt.Sprintf("the server %q", name), exited: exited, close: stop}
	if cn.version, err = initialize(ctx, c, cfg); err != nil {
		// If the server ended, that is the reason: its stdout closed as it
		// exited, and the process is about to be reaped.
		select {
		case why := <-exited:
			err = why
		case <-time.After(time.Second):
		}
		stop()
		return nil, fmt.Errorf("initialize %q: %v", name, err)
	}
	if cfg.protocol == protocolListen && !mcp.IsModernProtocol(cn.version) {
		stop()
		return nil, fmt.Errorf("the server %q does not speak %s (it answered %s): use -protocol %s, or auto", name, protocolListen, cn.version, protocolLegacy)
	}
	return cn, nil
}

// waitFor reports whether done is closed within d.
func waitFor(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
