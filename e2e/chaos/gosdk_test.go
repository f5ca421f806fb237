package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The adapter's _meta keys (adapter.MetaVersion, adapter.MetaVersions):
// this module does not import the adapter.
const (
	metaVersion  = "io.github.mcplive/version"
	metaVersions = "io.github.mcplive/versions"
)

// The protocol eras.
const (
	legacyEra = "2025-11-25" // initialize, a GET stream, resources/subscribe
	modernEra = "2026-07-28" // server/discover, subscriptions/listen
)

const (
	// callTimeout bounds every request.
	callTimeout = 10 * time.Second
	// retryPause is how long a client waits before it sends a failed
	// request again, and between two listens of one URI.
	retryPause = 100 * time.Millisecond
)

// An sdkClient is an application on go-sdk
// (github.com/modelcontextprotocol/go-sdk) that watches its URIs through
// its own proxy: told that a URI changed, it reads it again.
//
// What go-sdk v1.8.0 does by itself on a dropped connection, and what the
// application adds:
//
//   - 2025-11-25: go-sdk reopens a dropped GET stream after 1 to 2 s with
//     Last-Event-ID, the last event id it read on that stream. A stream
//     that drops before it carried an event is reopened without one (the
//     id it resumed from is forgotten), which loses what the dropped
//     stream swallowed; the application's HTTP client puts the last id
//     back (tap.get), and counts it as restored.
//   - After 5 reopened GET streams in a row without a new event id, or a
//     response body cut while read, go-sdk fails the whole session (and
//     on 2026-07-28 too: a cut read fails the connection). The
//     application then connects again and subscribes again, naming the
//     version it last read of each URI (_meta MetaVersion on 2025-11-25,
//     MetaVersions on 2026-07-28): the server notifies at once the URIs
//     that changed meanwhile.
//   - 2026-07-28: go-sdk opens one subscriptions/listen per Subscribe and
//     never awaits it; when the stream drops, nothing tells the
//     application, and go-sdk still counts the URI as subscribed. The
//     application's HTTP client sees the listen's response end
//     (tap.post); the application unsubscribes the URI and subscribes it
//     again, and a sending middleware names the version it last read.
type sdkClient struct {
	log      *clientLog
	era      string
	endpoint string
	rt       *http.Transport
	// fixResume: put back the Last-Event-ID that go-sdk drops.
	fixResume bool

	mu     sync.Mutex
	cs     *mcp.ClientSession // nil between sessions
	gen    int                // the session's number, from 1
	csDone chan struct{}      // closed when cs's connection ends
	newCS  chan struct{}      // closed and replaced when cs changes
	// versions are the versions last read, by URI; dirty the URIs to read
	// again; listening the JSON-RPC id of each URI's current listen, and
	// acked those acknowledged in this session; relisten the URIs whose
	// listen ended.
	versions  map[string]string
	dirty     map[string]bool
	listening map[string]string
	acked     map[string]bool
	relisten  map[string]bool
	// lastID is the last event id seen on each session's GET streams;
	// gets the sessions that opened one.
	lastID map[string]uint64
	gets   map[string]bool
	read   map[string]bool // URIs read at least once

	kick  chan struct{} // capacity 1: dirty has URIs
	again chan struct{} // capacity 1: relisten has URIs
	ready chan struct{} // closed once every URI was subscribed and read
	once  sync.Once
}

func newSDKClient(log *clientLog, era, endpoint string, fixResume bool) *sdkClient {
	return &sdkClient{
		log: log, era: era, endpoint: endpoint, fixResume: fixResume,
		rt:       &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second},
		newCS:    make(chan struct{}),
		versions: make(map[string]string), dirty: make(map[string]bool),
		listening: make(map[string]string), acked: make(map[string]bool), relisten: make(map[string]bool),
		lastID: make(map[string]uint64), gets: make(map[string]bool), read: make(map[string]bool),
		kick: make(chan struct{}, 1), again: make(chan struct{}, 1), ready: make(chan struct{}),
	}
}

// run keeps the client watching until ctx ends, then closes its session.
func (c *sdkClient) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { c.reader(ctx) })
	c.sessions(ctx)
	wg.Wait()
	c.rt.CloseIdleConnections()
}

// sessions connects, subscribes and serves one session after another,
// until ctx ends.
func (c *sdkClient) sessions(ctx context.Context) {
	for gen := 1; ctx.Err() == nil; {
		cs, err := c.connect(ctx, gen)
		if err != nil {
			c.log.count(&c.log.retried)
			pause(ctx, retryPause)
			continue
		}
		c.log.mark(time.Now(), fmt.Sprintf("session %d connected (%s)", gen, cs.ID()))
		done := make(chan struct{})
		go func() {
			err := cs.Wait()
			c.log.mark(time.Now(), fmt.Sprintf("session %d ended: %v", gen, err))
			close(done)
		}()
		c.setSession(cs, gen, done)
		if gen > 1 {
			c.log.count(&c.log.newSessions)
		}
		if c.subscribeAll(ctx, cs, done, gen > 1) {
			if gen == 1 {
				c.markAllDirty()
			}
			c.serve(ctx, cs, done)
		}
		c.setSession(nil, gen, nil)
		cs.Close()
		<-done
		gen++
	}
}

// connect opens session number gen on the era asked for.
func (c *sdkClient) connect(ctx context.Context, gen int) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcplive-chaos", Version: "0.0.0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			c.notified(req.Params.URI, time.Now())
		},
	})
	client.AddSendingMiddleware(c.nameVersions)
	client.AddReceivingMiddleware(c.seeAcks(gen))
	transport := &mcp.StreamableClientTransport{
		Endpoint:   c.endpoint,
		HTTPClient: &http.Client{Transport: &tap{base: c.rt, c: c, gen: gen}},
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: c.era})
	if err != nil {
		return nil, err
	}
	if got := cs.InitializeResult().ProtocolVersion; got != c.era {
		cs.Close()
		return nil, fmt.Errorf("negotiated %s, asked for %s", got, c.era)
	}
	return cs, nil
}

func (c *sdkClient) setSession(cs *mcp.ClientSession, gen int, done chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cs, c.gen, c.csDone = cs, gen, done
	close(c.newCS)
	c.newCS = make(chan struct{})
	if cs != nil {
		clear(c.listening)
		clear(c.acked)
		clear(c.relisten)
	}
}

// session waits for a live session; nil when ctx ends first.
func (c *sdkClient) session(ctx context.Context) *mcp.ClientSession {
	for {
		c.mu.Lock()
		cs, done, changed := c.cs, c.csDone, c.newCS
		c.mu.Unlock()
		if cs != nil {
			select {
			case <-done:
			default:
				return cs
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// subscribeAll subscribes every URI on cs, naming the versions last read
// when again; false when the session ended or ctx did first.
func (c *sdkClient) subscribeAll(ctx context.Context, cs *mcp.ClientSession, done <-chan struct{}, again bool) bool {
	for _, uri := range c.log.uris {
		for {
			params := &mcp.SubscribeParams{URI: uri}
			// On 2026-07-28 nameVersions names the version in the listen.
			if v := c.version(uri); v != "" && c.era == legacyEra {
				params.Meta = mcp.Meta{metaVersion: v}
			}
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			err := cs.Subscribe(cctx, params)
			cancel()
			if err == nil {
				if again && c.era == legacyEra {
					c.log.opened(openSession, time.Now(), []string{uri})
				}
				break
			}
			select {
			case <-done:
				return false
			case <-ctx.Done():
				return false
			default:
			}
			c.log.count(&c.log.retried)
			pause(ctx, retryPause)
		}
	}
	return true
}

// serve listens again to the URIs whose listen stream ended, until the
// session or ctx ends.
func (c *sdkClient) serve(ctx context.Context, cs *mcp.ClientSession, done <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-c.again:
		}
		c.mu.Lock()
		uris := make([]string, 0, len(c.relisten))
		for uri := range c.relisten {
			uris = append(uris, uri)
		}
		clear(c.relisten)
		c.mu.Unlock()
		for _, uri := range uris {
			// go-sdk still counts the URI as subscribed: Subscribe would
			// do nothing. Unsubscribe cancels the dead listen first.
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			cs.Unsubscribe(cctx, &mcp.UnsubscribeParams{URI: uri})
			err := cs.Subscribe(cctx, &mcp.SubscribeParams{URI: uri})
			cancel()
			if err != nil {
				return // the session has failed: the next one subscribes all
			}
		}
		pause(ctx, retryPause) // a listen refused at once is not sent again at once
	}
}

// nameVersions is a sending middleware: it names, in a
// subscriptions/listen, the version last read of each URI
// (MetaVersions), which go-sdk's Subscribe cannot.
func (c *sdkClient) nameVersions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.SubscriptionsListenParams); ok && p.Notifications != nil && len(p.Notifications.ResourceSubscriptions) > 0 {
			seen := make(map[string]any)
			for _, uri := range p.Notifications.ResourceSubscriptions {
				if v := c.version(uri); v != "" {
					seen[uri] = v
				}
			}
			if p.Meta == nil {
				p.Meta = mcp.Meta{}
			}
			p.Meta[metaVersions] = seen
		}
		return next(ctx, method, req)
	}
}

// seeAcks is a receiving middleware that notes each acknowledged listen
// of session gen: go-sdk swallows the acknowledgements.
func (c *sdkClient) seeAcks(gen int) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
				now := time.Now()
				uris := p.Notifications.ResourceSubscriptions
				c.mu.Lock()
				current := c.gen == gen
				kind := openFirst
				for _, uri := range uris {
					if current {
						if c.acked[uri] {
							kind = openRelisten
						} else if gen > 1 {
							kind = openSession
						}
						c.acked[uri] = true
					}
				}
				c.mu.Unlock()
				if current {
					c.log.opened(kind, now, append([]string(nil), uris...))
					c.checkReady()
				}
			}
			return next(ctx, method, req)
		}
	}
}

// notified records a notification and has the URI read again.
func (c *sdkClient) notified(uri string, at time.Time) {
	c.log.noted(uri, at)
	c.mu.Lock()
	c.dirty[uri] = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *sdkClient) markAllDirty() {
	c.mu.Lock()
	for _, uri := range c.log.uris {
		c.dirty[uri] = true
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *sdkClient) version(uri string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.versions[uri]
}

// reader reads the URIs marked dirty, one at a time, until ctx ends.
func (c *sdkClient) reader(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		for {
			c.mu.Lock()
			var uri string
			for u := range c.dirty {
				uri = u
				break
			}
			delete(c.dirty, uri)
			c.mu.Unlock()
			if uri == "" {
				break
			}
			if !c.readURI(ctx, uri) {
				return
			}
		}
	}
}

// readURI reads uri until a read succeeds, on whichever session is live;
// false when ctx ends first.
func (c *sdkClient) readURI(ctx context.Context, uri string) bool {
	for {
		cs := c.session(ctx)
		if cs == nil {
			return false
		}
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: uri})
		cancel()
		if err == nil {
			var r read
			if r, err = showResult(uri, res); err == nil {
				r.start, r.end = start, time.Now()
				c.mu.Lock()
				c.versions[uri] = r.version
				c.read[uri] = true
				c.mu.Unlock()
				c.log.readDone(r)
				c.checkReady()
				return true
			}
			c.log.problem(err)
		}
		if ctx.Err() != nil {
			return false
		}
		c.log.count(&c.log.retried)
		pause(ctx, retryPause)
	}
}

// checkReady closes ready once every URI was read and, on 2026-07-28,
// acknowledged.
func (c *sdkClient) checkReady() {
	c.mu.Lock()
	all := true
	for _, uri := range c.log.uris {
		if !c.read[uri] || c.era == modernEra && !c.acked[uri] {
			all = false
		}
	}
	c.mu.Unlock()
	if all {
		c.once.Do(func() { close(c.ready) })
	}
}

// showResult reads the customer's name and the result's version out of
// a read of app://customers_show/{id}.
func showResult(uri string, res *mcp.ReadResourceResult) (read, error) {
	if len(res.Contents) != 1 {
		return read{}, fmt.Errorf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	var got struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	id, _ := loadkit.ShowID(uri)
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &got); err != nil || got.ID != id || got.Name == "" {
		return read{}, fmt.Errorf("read %s: %.200q is not customer %d with a name", uri, res.Contents[0].Text, id)
	}
	v, _ := res.Meta[metaVersion].(string)
	if v == "" {
		return read{}, fmt.Errorf("read %s: no _meta[%q] in the result", uri, metaVersion)
	}
	return read{uri: uri, name: got.Name, version: v}, nil
}

// pause waits d, or less if ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// A tap is the HTTP layer of one session of an sdkClient: it watches the
// session's GET streams (their event ids, and the Last-Event-ID go-sdk
// sends) and, on 2026-07-28, when each listen stream ends.
type tap struct {
	base http.RoundTripper
	c    *sdkClient
	gen  int
}

func (t *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	switch sid := req.Header.Get("Mcp-Session-Id"); {
	case req.Method == http.MethodGet && sid != "":
		return t.get(req, sid)
	case req.Method == http.MethodPost && t.c.era == modernEra && req.Body != nil:
		return t.post(req)
	}
	return t.base.RoundTrip(req)
}

// get opens a GET stream of session sid, with the session's last event id
// when go-sdk forgot it, and watches the ids of its events.
func (t *tap) get(req *http.Request, sid string) (*http.Response, error) {
	c := t.c
	lei := req.Header.Get("Last-Event-ID")
	c.mu.Lock()
	last, seen := c.lastID[sid]
	first := !c.gets[sid]
	c.gets[sid] = true
	c.mu.Unlock()
	if lei == "" && seen && c.fixResume {
		lei = strconv.FormatUint(last, 10)
		req = req.Clone(req.Context())
		req.Header.Set("Last-Event-ID", lei)
		c.log.count(&c.log.restored)
	}
	kind := openFirst
	switch {
	case lei != "":
		kind = openResume
	case !first:
		kind = openAfresh
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		c.log.opened(kind, time.Now(), nil)
		c.log.mark(time.Now(), fmt.Sprintf("GET stream of session %d opened, Last-Event-ID %q", t.gen, lei))
		resp.Body = &sseIDs{r: resp.Body, onID: func(id string) { c.sawID(sid, id) }}
	}
	return resp, nil
}

// sawID notes event id on session sid's GET stream.
func (c *sdkClient) sawID(sid, id string) {
	c.log.mark(time.Now(), "event id "+id)
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		c.log.problem(fmt.Errorf("GET stream event id %q is not a number", id))
		return
	}
	c.mu.Lock()
	last, seen := c.lastID[sid]
	if !seen || n > last {
		c.lastID[sid] = n
	}
	c.mu.Unlock()
	if seen && n <= last {
		c.log.count(&c.log.dups)
	}
}

// post sends a POST; a subscriptions/listen's stream is watched to its
// end.
func (t *tap) post(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Notifications struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "subscriptions/listen" || len(msg.Params.Notifications.ResourceSubscriptions) == 0 {
		return t.base.RoundTrip(req)
	}
	uris, id := msg.Params.Notifications.ResourceSubscriptions, string(msg.ID)
	t.c.listenStarted(t.gen, uris, id)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.c.listenEnded(t.gen, uris, id)
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		t.c.listenEnded(t.gen, uris, id)
		return resp, nil
	}
	resp.Body = &onEnd{r: resp.Body, end: func() { t.c.listenEnded(t.gen, uris, id) }}
	return resp, nil
}

func (c *sdkClient) listenStarted(gen int, uris []string, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	for _, uri := range uris {
		c.listening[uri] = id
	}
}

// listenEnded has the URIs of listen id listened to again, unless
// another listen took over.
func (c *sdkClient) listenEnded(gen int, uris []string, id string) {
	c.mu.Lock()
	queued := false
	for _, uri := range uris {
		if gen == c.gen && c.listening[uri] == id {
			delete(c.listening, uri)
			c.relisten[uri] = true
			queued = true
		}
	}
	c.mu.Unlock()
	if queued {
		select {
		case c.again <- struct{}{}:
		default:
		}
	}
}

// sseIDs passes an event stream through and calls onID with the id of
// every event in it.
type sseIDs struct {
	r    io.ReadCloser
	line []byte
	onID func(string)
}

func (s *sseIDs) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	for _, b := range p[:n] {
		if b != '\n' {
			s.line = append(s.line, b)
			continue
		}
		line := bytes.TrimSuffix(s.line, []byte("\r"))
		if id, ok := bytes.CutPrefix(line, []byte("id:")); ok {
			s.onID(string(bytes.TrimPrefix(id, []byte(" "))))
		}
		s.line = s.line[:0]
	}
	return n, err
}

func (s *sseIDs) Close() error { return s.r.Close() }

// onEnd passes a body through and calls end once, when reading it fails
// or ends, or it is closed.
type onEnd struct {
	r    io.ReadCloser
	once sync.Once
	end  func()
}

func (o *onEnd) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err != nil {
		o.once.Do(o.end)
	}
	return n, err
}

func (o *onEnd) Close() error {
	o.once.Do(o.end)
	return o.r.Close()
}
