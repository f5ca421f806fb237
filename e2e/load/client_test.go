package load

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
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

// newHTTPTransport returns the HTTP transport every client of a run
// shares: loopback only, no proxy, and enough idle connections kept that
// a hundred sessions POSTing at once do not keep dialling.
func newHTTPTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     30 * time.Second,
	}
}

// dialOptions say what kind of client dial makes.
type dialOptions struct {
	name string // for messages: "legacy-7", "writer"
	era  string
	// getStream asks mcp-go to keep a GET stream open (legacy only).
	getStream      bool
	onNotification func(mcp.JSONRPCNotification)
}

// dial connects an mcp-go client to url and initializes it on o.era. life
// is the client's lifetime: its GET stream, if any, listens until life
// ends or the client is closed. opened is closed when the GET stream has
// been answered with 200, which is when the server can write into it.
func dial(life context.Context, url string, rt http.RoundTripper, p *loadkit.Problems, o dialOptions) (c *client.Client, opened <-chan struct{}, err error) {
	watch := &streamWatch{base: rt, opened: make(chan struct{})}
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(&http.Client{Transport: watch}),
		transport.WithHTTPLogger(p.TransportLogger(o.name, nil)),
	}
	if o.getStream {
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		return nil, nil, err
	}
	c = client.NewClient(tr, client.WithProtocolVersion(o.era))
	if o.onNotification != nil {
		c.OnNotification(o.onNotification)
	}
	if err := c.Start(life); err != nil {
		return nil, nil, fmt.Errorf("%s: start: %w", o.name, err)
	}
	ctx, cancel := context.WithTimeout(life, callTimeout)
	defer cancel()
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "mcplive-load-e2e", Version: "0.0.0"},
	}})
	if err == nil && res.ProtocolVersion != o.era {
		err = fmt.Errorf("negotiated protocol %s, want %s", res.ProtocolVersion, o.era)
	}
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%s: initialize: %w", o.name, err)
	}
	return c, watch.opened, nil
}

// streamWatch is a client's http.RoundTripper that tells when the server
// answered its GET stream with 200. mcp-go opens that stream in the
// background after initialize and says nothing of it.
type streamWatch struct {
	base   http.RoundTripper
	opened chan struct{}
	once   sync.Once
}

func (w *streamWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		w.once.Do(func() { close(w.opened) })
	}
	return resp, err
}
