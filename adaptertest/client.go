// Package adaptertest drives an adapter in process, the way an agent would,
// for the tests of applications built on github.com/mcplive/adapter.
//
//	func TestShowCustomer(t *testing.T) {
//		a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))
//		adapter.Live(a, "customers_show", "One customer.", showCustomer)
//
//		c := adaptertest.New(t, a)
//		text, err := c.Read("app://customers_show/12")
//		…
//		_, err = c.Read("app://customers_show/twelve")
//		var werr *adaptertest.WireError
//		if !errors.As(err, &werr) || werr.Code != -32602 { … }
//	}
//
// A Client speaks protocol version 2026-07-28 by default and 2025-11-25 (with
// the initialize handshake) with Legacy, so a test can cover both eras. It
// sends raw JSON-RPC through Adapter.HandleMessage, over an in-process
// session registered with the adapter's server, so the errors it reports are
// exactly those that the adapter's HTTP and stdio edges put on the wire,
// code, message and data: a *WireError.
package adaptertest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// The protocol versions a Client speaks.
const (
	// ModernVersion is the default: every request carries its protocol
	// version, client capabilities and client info in _meta, and there is
	// no handshake.
	ModernVersion = mcp.ProtocolVersion20260728
	// LegacyVersion is the version Legacy selects: the client initializes
	// its session first and requests carry no protocol _meta.
	LegacyVersion = mcp.ProtocolVersion20251125
)

// An Option configures New.
type Option func(*config)

type config struct {
	version string
	ctx     context.Context
}

// Legacy makes the client speak protocol version 2025-11-25: New performs
// the initialize handshake, and its requests carry no protocol _meta.
func Legacy() Option {
	return func(c *config) { c.version = LegacyVersion }
}

// WithContext makes ctx the parent of the context of every request the
// client sends, as a transport's context function would: put into it what
// your grant function or middleware reads, such as an authenticated subject.
// Ending ctx ends the requests, and subscriptions, that run under it.
func WithContext(ctx context.Context) Option {
	return func(c *config) {
		if ctx != nil {
			c.ctx = ctx
		}
	}
}

// Client is an in-process MCP client of one adapter, with a session of its
// own. Create one with New; it is closed when the test ends. Its methods
// may be called from several goroutines at once. An error the server
// answered is returned; only a failure of the client itself (a result that
// does not decode) fails the test, with t.Fatal, which has to happen on the
// test's goroutine.
type Client struct {
	t       testing.TB
	a       *adapter.Adapter
	version string
	session *server.InProcessSession
	ctx     context.Context // carries the session
	ids     atomic.Int64

	mu     sync.Mutex
	subs   map[*Subscription]struct{}             // open subscriptions (listen.go)
	acks   map[string]chan mcp.SubscriptionFilter // listen requests awaiting their acknowledgement, by id
	done   chan struct{}                          // closed when the client closes
	exited chan struct{}                          // closed when forward returns
}

// New returns a client of a, with a session registered with a's server
// until the test ends. With Legacy it also initializes the session and
// fails the test if that fails.
func New(t testing.TB, a *adapter.Adapter, opts ...Option) *Client {
	t.Helper()
	if a == nil {
		t.Fatal("adaptertest.New: nil *adapter.Adapter")
	}
	cfg := config{version: ModernVersion, ctx: context.Background()}
	for _, o := range opts {
		o(&cfg)
	}
	srv := a.Server()
	session := server.NewInProcessSession("adaptertest-"+rand.Text(), nil)
	if err := srv.RegisterSession(cfg.ctx, session); err != nil {
		t.Fatalf("adaptertest.New: registering the session: %v", err)
	}
	c := &Client{
		t:       t,
		a:       a,
		version: cfg.version,
		session: session,
		ctx:     srv.WithContext(cfg.ctx, session),
		subs:    make(map[*Subscription]struct{}),
		acks:    make(map[string]chan mcp.SubscriptionFilter),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	go c.forward()
	t.Cleanup(c.close)
	if c.version != ModernVersion {
		c.initialize()
	}
	return c
}

// Version returns the protocol version the client speaks.
func (c *Client) Version() string { return c.version }

// Adapter returns the adapter the client talks to.
func (c *Client) Adapter() *adapter.Adapter { return c.a }

// SessionID returns the ID of the client's session, as
// server.ClientSessionFromContext(ctx).SessionID() reports it to the
// adapter's grant function and middleware.
func (c *Client) SessionID() string { return c.session.SessionID() }

// initialize performs the legacy handshake.
func (c *Client) initialize() {
	c.t.Helper()
	_, err := c.Call(string(mcp.MethodInitialize), mcp.InitializeParams{
		ProtocolVersion: c.version,
		Capabilities:    mcp.ClientCapabilities{},
		ClientInfo:      clientInfo(),
	})
	if err != nil {
		c.t.Fatalf("adaptertest.New: initialize: %v", err)
	}
	c.Notify(string(mcp.MethodNotificationInitialized), nil)
}

// close ends the client's listen streams, unregisters the session, which
// frees what the server holds for it (legacy subscriptions included), and
// stops forwarding notifications.
func (c *Client) close() {
	c.mu.Lock()
	subs := make([]*Subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.end()
	}
	c.a.Server().UnregisterSession(context.WithoutCancel(c.ctx), c.session.SessionID())
	close(c.done)
	<-c.exited
}

// forward hands each notification the server sends the session to dispatch.
// Draining the channel all along keeps mcp-go from dropping notifications
// (it drops a send that would block) and the adapter's delivery from
// waiting on a full channel.
func (c *Client) forward() {
	defer close(c.exited)
	for {
		select {
		case n := <-c.session.ClientNotifications():
			c.dispatch(n)
		case <-c.done:
			return
		}
	}
}

// clientInfo is how the client introduces itself.
func clientInfo() mcp.Implementation {
	return mcp.Implementation{Name: "adaptertest", Version: "1"}
}

// Call sends one request and returns its result as the server encoded it.
// params is encoded as JSON and must encode to an object, or be nil (or a
// nil pointer or map: no params either). For
// protocol version 2026-07-28 the client adds the protocol _meta. The error
// is a *WireError when the server answered one.
//
// Call is the way to any method the Client has no helper for.
func (c *Client) Call(method string, params any) (json.RawMessage, error) {
	c.t.Helper()
	res, werr := c.call(method, params)
	if werr != nil {
		return nil, werr
	}
	return res, nil
}

// Notify sends one notification.
func (c *Client) Notify(method string, params any) {
	c.t.Helper()
	msg := c.encode(nil, method, params)
	if resp := c.a.HandleMessage(c.ctx, msg); resp != nil {
		c.t.Fatalf("adaptertest: notification %s answered %v", method, resp)
	}
}

// call sends one request and decodes its response.
func (c *Client) call(method string, params any) (json.RawMessage, *WireError) {
	c.t.Helper()
	id := c.ids.Add(1)
	return c.decode(method, c.a.HandleMessage(c.ctx, c.encode(id, method, params)))
}

// decode returns the result or the error of a response, as the wire
// carries them.
func (c *Client) decode(method string, resp mcp.JSONRPCMessage) (json.RawMessage, *WireError) {
	c.t.Helper()
	if resp == nil {
		c.t.Fatalf("adaptertest: %s: no response", method)
	}
	raw, err := json.Marshal(resp)
	if err != nil {
		c.t.Fatalf("adaptertest: %s: encoding the response: %v", method, err)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *WireError      `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		c.t.Fatalf("adaptertest: %s: decoding the response: %v", method, err)
	}
	if env.Error != nil {
		return nil, env.Error
	}
	return env.Result, nil
}

// encode builds a request (or, with a nil id, a notification).
func (c *Client) encode(id any, method string, params any) json.RawMessage {
	c.t.Helper()
	p, err := c.withMeta(params)
	if err != nil {
		c.t.Fatalf("adaptertest: %s: %v", method, err)
	}
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      any             `json:"id,omitempty"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{mcp.JSONRPC_VERSION, id, method, p})
	if err != nil {
		c.t.Fatalf("adaptertest: %s: encoding the request: %v", method, err)
	}
	return msg
}

// withMeta encodes params, adding for protocol version 2026-07-28 the _meta
// that every modern request carries: the protocol version, the client's
// capabilities and its info.
//
// Params that encode to null (a nil pointer or map) are none, as nil is:
// JSON-RPC has no null params, and null would decode to a nil map here.
func (c *Client) withMeta(params any) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encoding params: %w", err)
		}
		if string(b) == "null" {
			return c.withMeta(nil)
		}
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, fmt.Errorf("params must encode to a JSON object: %s", b)
		}
		if c.version != ModernVersion {
			return b, nil
		}
	} else if c.version != ModernVersion {
		return nil, nil
	}
	meta := map[string]any{}
	if raw, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("params._meta must be an object: %s", raw)
		}
		if meta == nil { // "_meta": null
			meta = map[string]any{}
		}
	}
	meta[mcp.MetaKeyProtocolVersion] = c.version
	meta[mcp.MetaKeyClientCapabilities] = mcp.ClientCapabilities{}
	meta[mcp.MetaKeyClientInfo] = clientInfo()
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	fields["_meta"] = b
	return json.Marshal(fields)
}
