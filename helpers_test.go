package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mcplive/adapter/internal/draw"
)

// The fixtures of the live tests: a tiny in-memory store, live commands on
// it that report what they read, and clients on every transport and era.

// testingT is what the helpers need of *testing.T and *testing.B.
type testingT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// itemStore is the application's database: items by id.
type itemStore struct {
	mu    sync.Mutex
	items map[int]string
}

func newItemStore(n int) *itemStore {
	s := &itemStore{items: make(map[int]string)}
	for i := 1; i <= n; i++ {
		s.items[i] = "v1"
	}
	return s
}

func (s *itemStore) get(id int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.items[id]
	return v, ok
}

func (s *itemStore) set(id int, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[id] = v
}

func (s *itemStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

type itemArgs struct {
	ID int `json:"id"`
}

func (a itemArgs) Validate() error {
	if a.ID < 1 {
		return FieldError{Field: "id", Message: "must be at least 1"}
	}
	return nil
}

type item struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

type countArgs struct {
	Min *int `json:"min,omitempty"`
}

// newLiveServer wraps a new mcp-go server with the items commands:
// items_show (reads the row), items_count (reads the table).
func newLiveServer(t testingT, st *itemStore, opts ...Option) *Adapter {
	t.Helper()
	srv := server.NewMCPServer("live-test", "1.0.0")
	a := Wrap(srv, opts...)
	Live(a, "items_show", "One item.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, fmt.Sprintf("items/%d", args.ID))
		v, ok := st.get(args.ID)
		if !ok {
			return item{}, ErrNotFound
		}
		return item{ID: args.ID, Name: v}, nil
	})
	Live(a, "items_count", "How many items.", func(ctx context.Context, args countArgs) (int, error) {
		Reads(ctx, "items")
		return st.count(), nil
	})
	return a
}

// note is one notifications/resources/updated a client received.
type note struct {
	uri   string
	subID string // the _meta subscription id as JSON, "" when absent
}

// watcher is a client connection that subscribes and collects
// notifications.
type watcher struct {
	c      *client.Client
	modern bool
	notes  chan note
	acks   chan ack
	stop   func() // ends the listen stream, when one is open
	close  func()
}

type ack struct {
	uris  []string
	subID string
}

// newWatcher wraps c; closeFn ends the connection, once, at shutdown or
// at the end of the test at the latest.
func newWatcher(t testingT, c *client.Client, modern bool, closeFn func()) *watcher {
	w := &watcher{c: c, modern: modern, notes: make(chan note, 1024), acks: make(chan ack, 16), close: sync.OnceFunc(closeFn)}
	t.Cleanup(w.shutdown)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		subID := ""
		if v, ok := n.Params.Meta[mcp.MetaKeySubscriptionID]; ok {
			b, _ := json.Marshal(v)
			subID = string(b)
		}
		switch n.Method {
		case mcp.MethodNotificationResourceUpdated:
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			w.notes <- note{uri: uri, subID: subID}
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			var f mcp.SubscriptionFilter
			b, _ := json.Marshal(n.Params.AdditionalFields["notifications"])
			_ = json.Unmarshal(b, &f)
			w.acks <- ack{uris: f.ResourceSubscriptions, subID: subID}
		}
	})
	return w
}

// subscribe subscribes uris: on the modern era with one listen stream
// (replacing any open one), on the legacy era with one resources/subscribe
// each. It returns the URIs acknowledged, the errors of those refused
// (legacy), and the subscription id (modern).
func (w *watcher) subscribe(t testingT, ctx context.Context, uris ...string) (acked []string, refused map[string]error, subID string) {
	t.Helper()
	refused = map[string]error{}
	if !w.modern {
		for _, u := range uris {
			if err := w.c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: u}}); err != nil {
				refused[u] = err
				continue
			}
			acked = append(acked, u)
		}
		return acked, refused, ""
	}
	if w.stop != nil {
		w.stop()
	}
	listenErr := make(chan error, 1)
	stop, err := w.c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: uris}, func(err error) { listenErr <- err })
	if err != nil {
		t.Fatalf("ListenAsync: %v", err)
	}
	w.stop = stop
	select {
	case a := <-w.acks:
		return a.uris, refused, a.subID
	case err := <-listenErr:
		t.Fatalf("listen: %v", err)
	case <-ctx.Done():
		t.Fatalf("no acknowledgement: %v", ctx.Err())
	}
	return nil, nil, ""
}

func (w *watcher) unlisten() {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

func (w *watcher) shutdown() {
	w.unlisten()
	w.close()
}

// expect waits for exactly n notifications and returns them.
func (w *watcher) expect(t testingT, ctx context.Context, n int) []note {
	t.Helper()
	var got []note
	for len(got) < n {
		select {
		case x := <-w.notes:
			got = append(got, x)
		case <-ctx.Done():
			t.Fatalf("got %d notifications %v, want %d: %v", len(got), got, n, ctx.Err())
		}
	}
	return got
}

// none checks that no notification arrived.
func (w *watcher) none(t testingT) {
	t.Helper()
	select {
	case x := <-w.notes:
		t.Fatalf("unexpected notification %+v", x)
	default:
	}
}

// A transport makes watchers for one adapter. multi says whether it can
// serve more than one client at once (mcp-go keeps one stdio session per
// process).
type liveTransport struct {
	name  string
	multi bool
	dial  func(t testingT, a *Adapter, legacy bool) *watcher
}

var liveTransports = []liveTransport{
	{name: "inprocess", multi: true, dial: dialInProcess},
	{name: "stdio", multi: false, dial: dialStdio},
	{name: "http", multi: true, dial: dialHTTP},
}

func protocolOpts(legacy bool) []client.ClientOption {
	if legacy {
		return []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	}
	return nil
}

func initialize(t testingT, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Start's context is the life of the connection (the legacy GET
	// stream's, for one), not of the handshake.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	var req mcp.InitializeRequest
	req.Params.ClientInfo = mcp.Implementation{Name: "live-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func dialInProcess(t testingT, a *Adapter, legacy bool) *watcher {
	c, err := client.NewInProcessClientWithOptions(a.Server(), protocolOpts(legacy)...)
	if err != nil {
		t.Fatal(err)
	}
	w := newWatcher(t, c, !legacy, func() { _ = c.Close() })
	initialize(t, c)
	return w
}

// dialStdio serves a over a pair of pipes with the adapter's stdio edge.
func dialStdio(t testingT, a *Adapter, legacy bool) *watcher {
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = a.ServeStdio(ctx, serverIn, serverOut)
	}()
	tr := transport.NewIO(clientIn, clientOut, io.NopCloser(nil))
	c := client.NewClient(tr, protocolOpts(legacy)...)
	w := newWatcher(t, c, !legacy, func() {
		_ = c.Close()
		cancel()
		_ = serverIn.Close()
		_ = serverOut.Close()
		_ = clientIn.Close()
		_ = clientOut.Close()
		<-served
	})
	initialize(t, c)
	return w
}

// dialHTTP serves a over Streamable HTTP with the adapter's HTTP edge, one
// server per client.
func dialHTTP(t testingT, a *Adapter, legacy bool) *watcher {
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	var opts []transport.StreamableHTTPCOption
	if legacy {
		// Legacy notifications outside a request travel on the GET stream.
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(hs.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, protocolOpts(legacy)...)
	w := newWatcher(t, c, !legacy, func() {
		_ = c.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	initialize(t, c)
	return w
}

// waitEmpty waits until the registry holds nothing at all.
func waitEmpty(t testingT, a *Adapter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.live.waitFor(ctx, func() bool {
		s := a.live.statsLocked()
		return s.Subscriptions == 0 && s.Queries == 0 && s.Sessions == 0 && s.Pending == 0 &&
			a.live.idleLocked() && len(a.live.listens) == 0 && len(a.live.registered) == 0
	})
	if err != nil {
		t.Fatalf("registry not empty: %+v (%v)", a.LiveStats(), err)
	}
}

func waitIdle(t testingT, a *Adapter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v (%+v)", err, a.LiveStats())
	}
}

// fakeSession is a client session driven by the test itself: requests go
// straight to the server's HandleMessage, and notifications stay in its
// channel until the test takes them (or never, for a slow client).
type fakeSession struct {
	id string
	ch chan mcp.JSONRPCNotification
}

func (s *fakeSession) Initialize()                                         {}
func (s *fakeSession) Initialized() bool                                   { return true }
func (s *fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.ch }
func (s *fakeSession) SessionID() string                                   { return s.id }

// fakeClient speaks raw JSON-RPC to a through a fakeSession.
type fakeClient struct {
	a       *Adapter
	s       *fakeSession
	nextID  int
	streams []context.CancelFunc
	wg      sync.WaitGroup
	backlog []mcp.JSONRPCNotification // taken while waiting for an acknowledgement
	// edge: the session is a Streamable HTTP one (edgeSession) whose
	// requests come through HTTPHandler.
	edge bool
}

// newFakeClient registers a session with room for buffer notifications.
func newFakeClient(t testingT, a *Adapter, id string, buffer int) *fakeClient {
	s := &fakeSession{id: id, ch: make(chan mcp.JSONRPCNotification, buffer)}
	if err := a.Server().RegisterSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	f := &fakeClient{a: a, s: s}
	t.Cleanup(f.close)
	return f
}

func (f *fakeClient) ctx() context.Context {
	if f.edge {
		return withHTTPEdge(f.a.Server().WithContext(context.Background(), edgeSession{f.s}))
	}
	return f.a.Server().WithContext(context.Background(), f.s)
}

// listenRequest is a subscriptions/listen request of protocol 2026-07-28
// for uris, with the request id id.
func listenRequest(id int, uris []string) []byte {
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": uris},
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "fake", "version": "1"},
		},
	}})
	return raw
}

// handleCall sends one request through a's HandleMessage in ctx and
// returns its error, nil on success.
func handleCall(a *Adapter, ctx context.Context, id int, method string, params any) *mcp.JSONRPCErrorDetails {
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	switch r := a.HandleMessage(ctx, raw).(type) {
	case mcp.JSONRPCError:
		return &r.Error
	case *mcp.JSONRPCError:
		return &r.Error
	}
	return nil
}

// call sends one legacy request and returns its error, nil on success.
func (f *fakeClient) call(method string, params any) *mcp.JSONRPCErrorDetails {
	f.nextID++
	return handleCall(f.a, f.ctx(), f.nextID, method, params)
}

func (f *fakeClient) subscribe(uri string) *mcp.JSONRPCErrorDetails {
	return f.call("resources/subscribe", map[string]any{"uri": uri})
}

func (f *fakeClient) unsubscribe(uri string) *mcp.JSONRPCErrorDetails {
	return f.call("resources/unsubscribe", map[string]any{"uri": uri})
}

// listen opens a modern subscriptions/listen stream for uris and returns the
// URIs acknowledged; the stream lasts until stop or close.
func (f *fakeClient) listen(t testingT, uris ...string) (acked []string, stop func()) {
	acked, _, stop = f.listenID(t, uris...)
	return acked, stop
}

// listenID is listen that also returns the stream's subscription id, as
// notifications carry it (JSON).
func (f *fakeClient) listenID(t testingT, uris ...string) (acked []string, subID string, stop func()) {
	t.Helper()
	return f.listenIn(nil, uris...)
}

// listenIn is listenID with the request's context made by in from the
// session's, with its cancel (nil: the session's as it is).
func (f *fakeClient) listenIn(in func(ctx context.Context, id int, cancel context.CancelFunc) context.Context, uris ...string) (acked []string, subID string, stop func()) {
	f.nextID++
	id := f.nextID
	raw := listenRequest(id, uris)
	ctx, cancel := context.WithCancel(f.ctx())
	if in != nil {
		ctx = in(ctx, id, cancel)
	}
	f.streams = append(f.streams, cancel)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.a.HandleMessage(ctx, raw)
	}()
	for n := range f.s.ch {
		if n.Method != mcp.MethodNotificationSubscriptionsAcknowledged {
			f.backlog = append(f.backlog, n)
			continue
		}
		filter, _ := n.Params.AdditionalFields["notifications"].(mcp.SubscriptionFilter)
		return filter.ResourceSubscriptions, fmt.Sprint(id), cancel
	}
	return nil, "", cancel
}

// noteOf is n as a note, when it is a notifications/resources/updated.
func noteOf(n mcp.JSONRPCNotification) (note, bool) {
	if n.Method != mcp.MethodNotificationResourceUpdated {
		return note{}, false
	}
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	x := note{uri: uri}
	if id, ok := n.Params.Meta[mcp.MetaKeySubscriptionID]; ok {
		x.subID = fmt.Sprint(id)
	}
	return x, true
}

// notes returns the notifications/resources/updated waiting in the session.
func (f *fakeClient) notes() []note {
	var out []note
	add := func(n mcp.JSONRPCNotification) {
		if x, ok := noteOf(n); ok {
			out = append(out, x)
		}
	}
	for _, n := range f.backlog {
		add(n)
	}
	f.backlog = nil
	for {
		select {
		case n := <-f.s.ch:
			add(n)
		default:
			return out
		}
	}
}

// take returns the URIs of the notifications waiting in the session, sorted.
func (f *fakeClient) take() []string {
	var uris []string
	for _, n := range f.notes() {
		uris = append(uris, n.uri)
	}
	slices.Sort(uris)
	return uris
}

func (f *fakeClient) close() {
	for _, c := range f.streams {
		c()
	}
	f.streams = nil
	f.wg.Wait()
	f.a.Server().UnregisterSession(context.Background(), f.s.id)
}

// checks is how many seeded cases each randomized test runs.
const checks = draw.Checks
