package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
	"github.com/mcplive/adapter/e2e/internal/loadkit/mcpgoclient"
)

// The protocol eras. The test pins each client's, so that a newer mcp-go
// cannot silently move it to another, and checks what was negotiated.
const (
	legacyEra = mcp.ProtocolVersion20251125 // initialize; a GET stream; resources/subscribe
	listenEra = mcp.ProtocolVersion20260728 // server/discover; subscriptions/listen
)

// callTimeout bounds every request and every wait for something the
// server should send.
const callTimeout = loadkit.CallTimeout

// clientAddr is the loopback address client number n connects from. Every
// client has its own, as agents on their own machines would: behind the
// balancer the instances tell 2026-07-28 clients apart by the address the
// balancer forwards (X-Forwarded-For), and would otherwise count them all
// as one against the per-client subscription cap. Linux answers on all
// of 127.0.0.0/8.
func clientAddr(n int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 2, byte(n / 250), byte(1 + n%250)})
}

// newHTTPTransport returns a client's own HTTP transport: loopback only,
// no proxy, connecting from source, and keeping open as many connections
// as it has requests in flight at most (its re-readers and its stream).
func newHTTPTransport(source netip.Addr) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			LocalAddr: &net.TCPAddr{IP: source.AsSlice()},
		}).DialContext,
		MaxIdleConnsPerHost: rereaders + 2,
		IdleConnTimeout:     idleConnTimeout,
	}
}

// idleConnTimeout is how long a client keeps an idle connection: shorter
// than the 10 s in which HAProxy (timeout http-request) and the example's
// server (ReadHeaderTimeout) want a new connection's first request, so
// that the client, not the server, closes a connection it dialled and
// did not use (http.Transport dials for a request and may then serve it
// on another). Otherwise a request sent on one just as the server closes
// it fails: a 408 from HAProxy, EOF from the example.
const idleConnTimeout = 5 * time.Second

// dialOptions say what kind of client dial makes.
type dialOptions struct {
	name string // for messages: "legacy-7", "writer-2"
	era  string
	// getStream asks mcp-go to keep a GET stream open (legacy only).
	getStream      bool
	onNotification func(mcp.JSONRPCNotification)
	// onStreamEnd is told when a GET stream that was answered 200 ends,
	// with the session it was on; not when the client closes it.
	onStreamEnd func(session string, err error)
	// excused says whether what the transport logs at Error level may be
	// the kill's doing (problems.transportLogger).
	excused func(line string) bool
	// versions, when set, are named in every subscriptions/listen the
	// client sends (versionNamer).
	versions func() map[string]string
}

// dial connects an mcp-go client to url over rt and initializes it on
// o.era. life is the client's lifetime: its GET stream, if any, listens
// until life ends or the client is closed.
func dial(life context.Context, url string, rt http.RoundTripper, p *loadkit.Problems, o dialOptions) (*client.Client, *streamWatch, error) {
	if o.versions != nil {
		rt = versionNamer{base: rt, versions: o.versions}
	}
	watch := &streamWatch{base: rt, onEnd: o.onStreamEnd, opened: make(map[string]chan struct{}), gone: make(map[string]bool)}
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(&http.Client{Transport: watch}),
		transport.WithHTTPLogger(p.TransportLogger(o.name, o.excused)),
	}
	if o.getStream {
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		return nil, nil, err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(o.era))
	if o.onNotification != nil {
		c.OnNotification(o.onNotification)
	}
	if err := c.Start(life); err != nil {
		return nil, nil, fmt.Errorf("%s: start: %w", o.name, err)
	}
	if err := initialize(life, c, o.era); err != nil {
		watch.close()
		c.Close()
		return nil, nil, fmt.Errorf("%s: %w", o.name, err)
	}
	return c, watch, nil
}

// initialize initializes c on era: the first time, or again after the
// server forgot its session.
func initialize(ctx context.Context, c *client.Client, era string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "mcplive-fleet-e2e", Version: "0.0.0"},
	}})
	if err == nil && res.ProtocolVersion != era {
		err = fmt.Errorf("negotiated protocol %s, want %s", res.ProtocolVersion, era)
	}
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// versionNamer is a client's http.RoundTripper that names, in the _meta of
// each subscriptions/listen it sends, the version the client last read of
// each URI (mcpgoclient.MetaVersions), as an application does that keeps
// what it read across a lost stream: mcp-go's Listen sends no _meta of the
// caller's.
type versionNamer struct {
	base     http.RoundTripper
	versions func() map[string]string
}

func (v versionNamer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil {
		return v.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if named, ok := nameVersions(body, v.versions); ok {
		body = named
	}
	req = req.Clone(req.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return v.base.RoundTrip(req)
}

// nameVersions adds the versions to body, a subscriptions/listen request:
// false for any other body.
func nameVersions(body []byte, versions func() map[string]string) ([]byte, bool) {
	var msg map[string]any
	if !bytes.Contains(body, []byte(`"subscriptions/listen"`)) || json.Unmarshal(body, &msg) != nil || msg["method"] != "subscriptions/listen" {
		return nil, false
	}
	params, _ := msg["params"].(map[string]any)
	if params == nil {
		return nil, false
	}
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		params["_meta"] = meta
	}
	meta[mcpgoclient.MetaVersions] = versions()
	named, err := json.Marshal(msg)
	return named, err == nil
}

// streamWatch is a client's http.RoundTripper that tells when the server
// answered a GET stream with 200, and when such a stream ended: mcp-go
// opens and re-opens it in the background and says nothing of either.
type streamWatch struct {
	base  http.RoundTripper
	onEnd func(session string, err error)

	mu      sync.Mutex
	opened  map[string]chan struct{} // by session: closed once its GET stream was answered 200
	gone    map[string]bool          // sessions a GET stream of which ended
	closing bool
}

// ended reports whether a GET stream of session, answered 200, has ended
// by no doing of the client's.
func (w *streamWatch) ended(session string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gone[session]
}

// streamOpened returns a channel closed once a GET stream of session has
// been answered 200.
func (w *streamWatch) streamOpened(session string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.openedLocked(session)
}

func (w *streamWatch) openedLocked(session string) chan struct{} {
	ch := w.opened[session]
	if ch == nil {
		ch = make(chan struct{})
		w.opened[session] = ch
	}
	return ch
}

// close says the client is closing: the ends of its streams are its own.
func (w *streamWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closing = true
}

func (w *streamWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	session := req.Header.Get("Mcp-Session-Id")
	w.mu.Lock()
	ch := w.openedLocked(session)
	select {
	case <-ch:
	default:
		close(ch)
	}
	w.mu.Unlock()
	resp.Body = &watchedBody{ReadCloser: resp.Body, w: w, session: session, ctx: req.Context()}
	return resp, nil
}

// watchedBody is a GET stream's body: the first error a read returns,
// io.EOF included, is the stream's end, unless the client ended it.
type watchedBody struct {
	io.ReadCloser
	w       *streamWatch
	session string
	ctx     context.Context
	once    sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		// Told before the reader sees the error, so before mcp-go logs it.
		b.once.Do(func() {
			b.w.mu.Lock()
			ours := !b.w.closing && b.ctx.Err() == nil
			if ours {
				b.w.gone[b.session] = true
			}
			b.w.mu.Unlock()
			if ours && b.w.onEnd != nil {
				b.w.onEnd(b.session, err)
			}
		})
	}
	return n, err
}

// sessionGone reports whether err says the server does not know the
// client's session (404): it died with its instance.
func sessionGone(err error) bool { return errors.Is(err, transport.ErrSessionTerminated) }
