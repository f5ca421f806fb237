package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// Who holds a subscription.
//
// A conn is what the subscription cap counts against: one session value.
// On stateless Streamable HTTP (protocol 2026-07-28) every listen stream is
// served by a session of its own, without an ID, so there a conn is one
// listen stream; elsewhere (stdio, in-process, legacy Streamable HTTP, SSE)
// it is the session, which may hold several listen streams and the
// subscriptions of resources/subscribe. Sessions are keyed by value, never
// by ID, since the modern ones all have the ID "".
//
// A stream groups the subscriptions that end together: those of one
// subscriptions/listen request, which end when the request's context does,
// or those of resources/subscribe on one session (the conn's legacy
// stream), which end with unsubscribe or when the session unregisters.
//
// A sub is one subscription: one URI, as the client spelled it, on one
// stream, sharing the query of its command and canonical arguments.

// subscribers is the registry's record of who holds subscriptions, guarded
// by the registry's mutex but refused, which is counted without it.
type subscribers struct {
	conns      map[server.ClientSession]*conn
	registered map[server.ClientSession]struct{}
	listens    map[*mcp.SubscriptionsListenRequest]*stream
	// clients counts the subscriptions held and being made per client key
	// (Adapter.clientKey), for the cap across connections.
	clients map[string]int
	subs    int // subscriptions held
	// refused counts the subscriptions refused.
	refused atomic.Uint64
}

type stream struct {
	c *conn
	// id is the JSON-RPC id of the subscriptions/listen request, which the
	// notifications carry as their subscription id; nil for the legacy
	// stream.
	id any
	// done is the listen request's context's Done channel; nil for the
	// legacy stream.
	done  <-chan struct{}
	req   *mcp.SubscriptionsListenRequest
	subs  map[string]*sub // by URI as sent
	stop  func() bool     // unregisters the context.AfterFunc that ends it
	ended bool
	// meta is the _meta of its subscriptions' notifications, made at the
	// first delivery and shared by them (see sub.notification).
	meta map[string]any
	// closer ends the listen request on the wire when Close ends the
	// stream; nil where the HTTP edge does not serve it (lifecycle.go).
	closer *listenCloser
	// versions: the client named the versions it last saw (MetaVersions,
	// MetaVersion), and its notifications carry theirs.
	versions bool
	// making are the URIs whose subscription is being made, its first run
	// under way. An unsubscribe meanwhile finds no subscription to end,
	// yet must still win: the subscription would outlive it, unknown to
	// the client, which unsubscribed last.
	making map[string]*making
}

// making is a URI of a stream whose subscription is being made.
type making struct {
	n      int    // the subscribes of it under way
	unsubs uint64 // the unsubscribes of it since the first of them began
}

type sub struct {
	uri  string
	q    *query
	st   *stream
	qi   int   // index in q.subs
	slot int32 // its place among its conn's (conn.go)
	// gone: ended. Set under the registry's mutex, and read without it by
	// delivery on GET streams, which queues again only what did not end.
	gone atomic.Bool
	// client is the key of the client holding it, for the client cap.
	client string
}

// errClosing answers a subscription that comes after Close began.
var errClosing = &rpcError{Code: mcp.INVALID_REQUEST, Message: "the server is shutting down: no new subscriptions"}

// errSubscriptionEnded answers a subscription whose stream or session ended
// while its first run was under way.
var errSubscriptionEnded = &rpcError{Code: mcp.INVALID_REQUEST, Message: "the subscription's session or stream has ended"}

// errSubscribeCancelled answers a subscription whose request was cancelled
// while its first run was under way.
var errSubscribeCancelled = &rpcError{Code: mcp.REQUEST_INTERRUPTED, Message: "the request was cancelled: no subscription was made"}

// subscribe makes the URI that resolve turned into rs a subscription on
// the stream open returns (open runs with r.mu held, and may refuse). The
// command runs once, as the agent, through the middleware chain, to learn
// what it reads and what it returns. A subscription is made only when that
// run succeeds: subscribing is reading and then watching, and answers the
// error the read would. subscribe returns nil when the subscription exists
// (it may have existed already), and otherwise the error the client should
// see.
func (r *liveRegistry) subscribe(ctx context.Context, rs *readState, open func() (*stream, *rpcError)) *rpcError {
	a := r.a
	if rs.err != nil {
		return a.readError(ctx, rs.cmd, rs.uri, rs.err)
	}
	c := rs.cmd
	args, err := c.decode(rs.args)
	if err != nil {
		return a.readError(ctx, c, rs.uri, err)
	}
	client := a.clientKey(ctx, c.name)

	r.mu.Lock()
	s, rerr := open()
	if rerr == nil {
		client = s.c.sameClient(client)
		rerr = r.admitLocked(s, rs.uri, client)
	}
	if rerr != nil || s.subs[rs.uri] != nil {
		if s != nil {
			r.maybeDropConnLocked(s.c)
		}
		r.mu.Unlock()
		return rerr // nil for a URI the stream holds already
	}
	mk, unsubs, before := r.reserveLocked(s, rs.uri, client)
	// Encoded when kept, or when the client needs the version.
	encode := r.kept.on && c.keep || s.versions || rs.want != ""
	hearing := r.kept.hearingNow()
	r.mu.Unlock()

	out := r.firstRun(ctx, c, args, rs.args, encode)

	r.mu.Lock()
	if rerr, drop := r.refuseFirstRunLocked(ctx, s, rs.uri, out, mk, unsubs); drop {
		s.c.n--
		r.releaseClientLocked(client)
		r.maybeDropConnLocked(s.c)
		r.mu.Unlock()
		if rerr == errRateLimitedFirstRun {
			return a.readError(ctx, c, rs.uri, out.err)
		}
		return rerr
	}
	defer r.mu.Unlock()
	r.fileLocked(ctx, s, rs, args, out, client, before, hearing)
	r.signalLocked()
	return nil
}

// reserveLocked holds the places of a subscription of uri on s, for
// client, against the caps while its first run runs, and notes that it is
// being made. It returns the note, the unsubscribes of uri it has seen,
// and the registry's change count.
func (r *liveRegistry) reserveLocked(s *stream, uri, client string) (mk *making, unsubs, before uint64) {
	s.c.n++
	r.clients[client]++
	mk = s.making[uri]
	if mk == nil {
		if s.making == nil {
			s.making = make(map[string]*making)
		}
		mk = &making{}
		s.making[uri] = mk
	}
	mk.n++
	return mk, mk.unsubs, r.changes
}

// errRateLimitedFirstRun marks a first run the rate limit refused: its
// error is the read's (refuseFirstRunLocked).
var errRateLimitedFirstRun = &rpcError{Message: "rate limited"}

// refuseFirstRunLocked ends the making of the subscription of uri on s,
// whose first run learned out, and says whether it is dropped rather
// than made, with the error to answer (nil for success).
//
// A first run that fails still makes the subscription, with the digest of
// its error: a watch on app://customers_show/99 hears when customer 99 is
// created, and a passing failure does not silently drop a URI from the
// acknowledgement. Only a refused rate limit refuses it, so that
// subscribing cannot be used to run commands past the limit.
//
// A request cancelled meanwhile (the HTTP client gone, or, for a listen,
// notifications/cancelled) makes none: its client will not hear, or will
// ignore, the answer, and would not know it holds the subscription.
// notifications/cancelled cannot reach the first run of
// resources/subscribe: subscribeHook runs before mcp-go registers the
// request's cancellation.
//
// An unsubscribe of the URI meanwhile makes none either, and the subscribe
// answers success: it was undone by the unsubscribe.
func (r *liveRegistry) refuseFirstRunLocked(ctx context.Context, s *stream, uri string, out runResult, mk *making, unsubs uint64) (rerr *rpcError, drop bool) {
	limited := out.err != nil && errors.As(out.err, new(*middleware.RateLimitError))
	if mk.n--; mk.n == 0 {
		delete(s.making, uri)
		if len(s.making) == 0 {
			s.making = nil // a stream is made once, and kept for long
		}
	}
	switch {
	case limited:
		return errRateLimitedFirstRun, true
	case s.ended:
		return errSubscriptionEnded, true
	case ctx.Err() != nil:
		return errSubscribeCancelled, true
	}
	return nil, s.subs[uri] != nil || mk.unsubs != unsubs
}

// admitLocked says whether stream s may take one more subscription, for
// uri, of client: nil when it may (or already holds uri), else why not.
func (r *liveRegistry) admitLocked(s *stream, uri, client string) *rpcError {
	a := r.a
	switch {
	case r.closed:
		return errClosing
	case s.ended:
		return errSubscriptionEnded
	case s.subs[uri] != nil:
		return nil
	case s.c.n >= a.cfg.subscriptionCap:
		return capError(a.cfg.subscriptionCap, "connection")
	case r.clients[client] >= a.cfg.clientSubscriptionCap:
		return capError(a.cfg.clientSubscriptionCap, "client")
	}
	return nil
}

// fileLocked makes the subscription of rs on s, whose first run gave out,
// sharing the query of its command and arguments or making it. before is
// the change count when the run began, and hearing whether the change
// feed heard every change then.
func (r *liveRegistry) fileLocked(ctx context.Context, s *stream, rs *readState, args any, out runResult, client string, before uint64, hearing bool) {
	key := queryKey{cmd: rs.cmd, args: string(rs.args), scope: rs.scope}
	// What it returned is current when no change at all came while it
	// ran: the query may not have been filed to hear one (kept.go).
	current := r.changes == before && hearing
	q := r.queries[key]
	if q == nil {
		q = newQuery(key, args, rs.args, out)
		if r.a.cfg.scope != nil {
			q.values = scopeValues(ctx)
		}
		r.made++
		q.seq = r.made
		r.queries[key] = q
		r.index.add(q, q.reads)
		r.keepRunLocked(q, out, current)
	} else {
		// The query is shared. What this run saw becomes its state, so
		// that every subscriber knows the query's digest: the newcomer
		// from its own run, the others from the notification applyLocked
		// queues when it differs from what they last heard.
		if r.applyLocked(q, out, current) {
			q.lastChange = time.Now().UnixNano()
		}
		r.startReadyLocked()
	}
	q.versioned = q.versioned || s.versions
	sb := &sub{uri: rs.uri, q: q, st: s, qi: len(q.subs), client: client}
	s.c.takeSlotLocked(sb)
	ref := subRef{sb: sb, c: s.c, slot: sb.slot}
	q.subs = append(q.subs, ref)
	s.subs[rs.uri] = sb
	r.subs++
	if v, ok := q.version(); rs.want != "" && (!ok || rs.want != versionText(v)) {
		// The client saw another result than this: it hears at once.
		r.enqueueLocked(ref)
	}
	if r.changes != before {
		// A change was reported while the command ran: what it returned
		// may predate the change, and the query may not have been filed
		// yet to hear it. One more run settles it.
		r.scheduleLocked(q)
	}
	r.signalLocked()
}

// capError refuses a subscription beyond the cap of its connection or of
// its client (per says which).
func capError(limit int, per string) *rpcError {
	return &rpcError{
		Code:    mcp.INVALID_REQUEST,
		Message: fmt.Sprintf("subscription limit reached: at most %d subscriptions per %s", limit, per),
		Data:    map[string]any{"limit": limit, "per": per},
	}
}

// releaseClientLocked gives back a place of client's subscription cap.
func (r *liveRegistry) releaseClientLocked(client string) {
	if r.clients[client]--; r.clients[client] <= 0 {
		delete(r.clients, client)
	}
}

// removeSubLocked ends one subscription, and its query when it was the
// last subscriber.
func (r *liveRegistry) removeSubLocked(sb *sub) {
	if sb.gone.Load() {
		return
	}
	sb.gone.Store(true)
	q := sb.q
	last := len(q.subs) - 1
	moved := q.subs[last]
	q.subs[sb.qi] = moved
	moved.sb.qi = sb.qi
	q.subs[last] = subRef{}
	q.subs = q.subs[:last]
	delete(sb.st.subs, sb.uri)
	sb.st.c.n--
	r.releaseClientLocked(sb.client)
	r.subs--
	sb.st.c.releaseSlotLocked(sb)
	if len(q.subs) == 0 {
		r.dropQueryLocked(q)
	}
	r.signalLocked()
}

// errListenBesideGET is why a listen stream is refused on a session whose
// resources/subscribe subscriptions are delivered on its GET stream (a
// conn delivers one way for its life).
const errListenBesideGET = "this session takes notifications on its GET stream (resources/subscribe); listen after those subscriptions end"

// openListen makes the stream of a subscriptions/listen request, or
// returns nil when session delivers on its GET stream.
func (r *liveRegistry) openListen(ctx context.Context, session server.ClientSession, id any, req *mcp.SubscriptionsListenRequest, versions bool) *stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.connLocked(session)
	if c.streamID != "" {
		return nil
	}
	s := &stream{c: c, id: id, done: ctx.Done(), req: req, subs: make(map[string]*sub), closer: listenCloserFrom(ctx), versions: versions}
	c.streams[s] = struct{}{}
	c.versioned = c.versioned || versions
	return s
}

// armListen makes s live until ctx ends, or ends it now when it holds no
// subscription. The after hook of the listen request (or its OnError) ends
// it as soon as the request returns; context.AfterFunc makes sure of it
// whatever way the request ends, without a goroutine waiting meanwhile.
func (r *liveRegistry) armListen(ctx context.Context, s *stream) {
	r.mu.Lock()
	if len(s.subs) == 0 || s.ended {
		r.endStreamLocked(s)
		r.mu.Unlock()
		return
	}
	r.listens[s.req] = s
	r.mu.Unlock()

	stop := context.AfterFunc(ctx, func() { r.endStream(s) })
	r.mu.Lock()
	s.stop = stop
	ended := s.ended
	r.mu.Unlock()
	if ended {
		stop()
	}
}

// endListen ends the stream of a listen request, if it has one.
func (r *liveRegistry) endListen(req *mcp.SubscriptionsListenRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.listens[req]; s != nil {
		r.endStreamLocked(s)
	}
}

func (r *liveRegistry) endStream(s *stream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endStreamLocked(s)
}

// endStreamLocked ends a listen stream and every subscription on it.
func (r *liveRegistry) endStreamLocked(s *stream) {
	if s.ended {
		return
	}
	s.ended = true
	for _, sb := range s.subs {
		r.removeSubLocked(sb)
	}
	if s.req != nil && r.listens[s.req] == s {
		delete(r.listens, s.req)
	}
	if s.stop != nil {
		s.stop()
	}
	delete(s.c.streams, s)
	r.maybeDropConnLocked(s.c)
	r.signalLocked()
}

// openLegacy is the open function of resources/subscribe: the legacy
// stream of the request's session. Only a registered session can hold one,
// since only its unregistration would free it: an ephemeral session (legacy
// Streamable HTTP without sessions) is refused. A Streamable HTTP session
// subscribing through HTTPHandler (ctx says) is delivered to on its GET
// stream.
func (r *liveRegistry) openLegacy(ctx context.Context, session server.ClientSession, versions bool) func() (*stream, *rpcError) {
	viaEdge := viaHTTPEdge(ctx)
	return func() (*stream, *rpcError) {
		if _, ok := r.registered[session]; !ok || session == nil {
			return nil, &rpcError{
				Code:    mcp.INVALID_REQUEST,
				Message: "resources/subscribe needs a session that lasts; this connection has none (use a stateful transport or subscriptions/listen)",
			}
		}
		c := r.connLocked(session)
		if _, isHTTP := session.(server.SessionWithStreamableHTTPConfig); viaEdge && isHTTP && c.streamID == "" && session.SessionID() != "" {
			if len(c.streams) > 0 {
				// A conn delivers one way for its life: its listen streams
				// take their notifications through the session, and the
				// GET stream would take them all.
				return nil, &rpcError{
					Code:    mcp.INVALID_REQUEST,
					Message: "resources/subscribe: this session takes notifications on subscriptions/listen streams; subscribe there, or after they end",
				}
			}
			c.mu.Lock()
			c.streamID = session.SessionID()
			c.mu.Unlock()
			r.streamConns[c.streamID] = c
		}
		if c.legacy == nil {
			c.legacy = &stream{c: c, subs: make(map[string]*sub)}
		}
		// A client that names a version once hears versions from then on.
		if versions && !c.legacy.versions {
			c.legacy.versions = true
			for _, sb := range c.legacy.subs {
				sb.q.versioned = true
			}
		}
		c.versioned = c.versioned || versions
		return c.legacy, nil
	}
}

// unsubscribe ends the resources/subscribe subscription of session to uri,
// if there is one, and withdraws those being made.
func (r *liveRegistry) unsubscribe(session server.ClientSession, uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.conns[session]
	if c == nil || c.legacy == nil {
		return
	}
	if mk := c.legacy.making[uri]; mk != nil {
		mk.unsubs++
	}
	if sb := c.legacy.subs[uri]; sb != nil {
		r.removeSubLocked(sb)
		r.maybeDropConnLocked(c)
	}
}

func (r *liveRegistry) sessionRegistered(session server.ClientSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registered[session] = struct{}{}
}

// sessionClosed frees everything a session held: its subscriptions on
// every stream, its outbox, and its delivery goroutine, which done wakes.
func (r *liveRegistry) sessionClosed(session server.ClientSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.registered, session)
	c := r.conns[session]
	if c == nil {
		return
	}
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	for s := range c.streams {
		r.endStreamLocked(s)
	}
	if c.legacy != nil {
		// Ended first, so that a resources/subscribe still running its
		// command gives up rather than subscribe a closed session.
		c.legacy.ended = true
		for _, sb := range c.legacy.subs {
			r.removeSubLocked(sb)
		}
	}
	r.maybeDropConnLocked(c)
}

// foreignURIs tells the URIs that resolve did not take and that belong to
// someone else: URIs outside the adapter's scheme, and static resources the
// user added in it. Subscriptions to those are left to mcp-go and the user's
// own hooks; any other URI in the adapter's scheme names nothing. It looks
// at the server's resources at most once, however many URIs a request
// lists.
type foreignURIs struct {
	a         *Adapter
	resources map[string]*server.ServerResource
	loaded    bool
}

func (f *foreignURIs) has(uri string) bool {
	if !strings.HasPrefix(uri, f.a.cfg.scheme+"://") {
		return true
	}
	if f.a.ownResource(uri) != nil {
		return false
	}
	if !f.loaded {
		f.resources, f.loaded = f.a.srv.ListResources(), true
	}
	_, ok := f.resources[uri]
	return ok
}

// clientKey is the key of the client a request comes from, for the cap
// of WithClientSubscriptionCap: its identity (WithIdentity) when it has
// one and no WithClientKey was given, else the client key function's. A
// key function that panics gives "", one key shared by every such request
// (command.go).
func (a *Adapter) clientKey(ctx context.Context, command string) (key string) {
	if a.cfg.identity != nil && !a.cfg.clientKeySet {
		if id, ok := a.identityOf(ctx); ok && id != "" {
			// Set apart from session IDs and addresses, which the
			// default key gives the requests without an identity.
			return identityKeyPrefix + id
		}
	}
	var err error
	defer func() {
		if err != nil {
			key = ""
		}
	}()
	defer recoverUserPanic(a.logger, command, "asking the client key function", &err)
	return a.cfg.clientKey(ctx, &middleware.Call{Command: command, Session: sessionFrom(ctx), Origin: middleware.Agent})
}

// identityKeyPrefix begins the client key of a request with an identity.
const identityKeyPrefix = "identity\x00"

// How subscriptions reach the live registry through mcp-go's hooks.
//
// subscriptions/listen (2026-07-28): mcp-go acknowledges the URI list its
// request holds after the before-hooks ran, so listenHook subscribes each
// URI the adapter owns and removes from the list those it refused; the
// acknowledgement then names exactly the rest. The request lives until its
// context ends; the after-hook, OnError and a context.AfterFunc end the
// stream's subscriptions then, whichever comes first.
//
// resources/subscribe (before 2026-07-28): mcp-go's before-hooks cannot
// fail a request, and it accepts any URI. A request-initialization hook can
// fail one, and sees the raw message, so subscribeHook serves the
// subscription there and, when it refuses the URI, fails the request. mcp-go
// answers such a failure with -32600 and the error's message; the exact
// error (resource-not-found for the era, -32602 with data.errors, the rate
// limit's code) goes into the errorBox, from which the adapter's transport
// edges answer it. Unsubscribe is served after mcp-go accepted it, and
// unregistering a session frees everything it held.

// installLiveHooks appends the hooks of the live registry to h. The hooks
// find a.live when they run, after Wrap made it.
func (a *Adapter) installLiveHooks(h *server.Hooks) {
	h.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		a.live.sessionRegistered(s)
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		a.live.sessionClosed(s)
		if id := s.SessionID(); id != "" {
			a.live.purgeEvents(id)
		}
	})
	h.AddOnRequestInitialization(a.subscribeHook)
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		a.live.unsubscribe(sessionFrom(ctx), req.Params.URI)
	})
	h.AddBeforeSubscriptionsListen(a.listenHook)
	h.AddAfterSubscriptionsListen(func(_ context.Context, _ any, req *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		a.live.endListen(req)
	})
	h.AddOnError(func(_ context.Context, _ any, method mcp.MCPMethod, message any, _ error) {
		if req, ok := message.(*mcp.SubscriptionsListenRequest); ok && method == mcp.MethodSubscriptionsListen {
			a.live.endListen(req)
		}
	})
}

// listenHook subscribes the URIs of a subscriptions/listen request that the
// adapter owns and leaves in the request only those it subscribed, and the
// URIs it does not own.
func (a *Adapter) listenHook(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
	uris := req.Params.Notifications.ResourceSubscriptions
	if len(uris) == 0 {
		return
	}
	session := sessionFrom(ctx)
	r := a.live
	var s *stream
	foreign := foreignURIs{a: a}
	kept := make([]string, 0, len(uris))
	seen, named := namedVersions(req.Params.Meta)
	for _, uri := range uris {
		rs := a.resolve(ctx, uri)
		if rs == nil {
			if foreign.has(uri) {
				kept = append(kept, uri)
			} else {
				r.refused.Add(1)
				a.logger.DebugContext(ctx, "adapter: subscription not acknowledged", "uri", uri, "reason", "no live command with a template")
			}
			continue
		}
		if session == nil {
			continue // mcp-go refuses the request: it needs a session
		}
		if s == nil {
			if s = r.openListen(ctx, session, id, req, named); s == nil {
				r.refused.Add(1)
				a.logger.DebugContext(ctx, "adapter: subscription not acknowledged", "uri", uri, "reason", errListenBesideGET)
				continue
			}
		}
		rs.want = seen[uri]
		if err := r.subscribe(ctx, rs, func() (*stream, *rpcError) { return s, nil }); err != nil {
			r.refused.Add(1)
			a.logger.DebugContext(ctx, "adapter: subscription not acknowledged", "uri", uri, "reason", err.Message)
			continue
		}
		kept = append(kept, uri)
	}
	req.Params.Notifications.ResourceSubscriptions = kept
	if s != nil {
		r.armListen(ctx, s)
	}
}

// namedVersions reads the versions a listen's client last saw, by URI
// (MetaVersions); named reports that it named any, even none.
func namedVersions(meta *mcp.Meta) (seen map[string]string, named bool) {
	if meta == nil {
		return nil, false
	}
	m, named := meta.AdditionalFields[MetaVersions].(map[string]any)
	seen = make(map[string]string, len(m))
	for uri, v := range m {
		if v, ok := v.(string); ok {
			seen[uri] = v
		}
	}
	return seen, named
}

// subscribeHook serves a legacy resources/subscribe of a URI the adapter
// owns, and fails the request when it refuses the URI; it refuses a
// subscriptions/listen whose scope cannot be decided (WithScope). Every
// other request passes after a substring test.
func (a *Adapter) subscribeHook(ctx context.Context, id any, message any) error {
	raw, ok := message.(json.RawMessage)
	// The substring test keeps the common request cheap. JSON may spell
	// the method with escapes ("resources\u002fsubscribe"), which mcp-go
	// decodes to the same method: any message with a backslash-u escape
	// is decoded to be sure.
	if !ok || !bytes.Contains(raw, []byte("subscri")) && !bytes.Contains(raw, []byte(`\u`)) {
		return nil
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			URI  string          `json:"uri"`
			Meta json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil // mcp-go answers it itself: a malformed request
	}
	var err *rpcError
	switch m.Method {
	case string(mcp.MethodSubscriptionsListen):
		// A listen whose scope cannot be decided is refused whole, rather
		// than acknowledged with no subscription: the client learns why.
		_, err = a.scopeOf(ctx, string(mcp.MethodSubscriptionsListen))
		return a.refuseSubscription(ctx, id, err)
	case string(mcp.MethodResourcesSubscribe):
		if m.Params.URI == "" {
			return nil // mcp-go answers it itself: a malformed request
		}
	default:
		return nil
	}
	uri := m.Params.URI
	meta, metaErr := subscribeMeta(m.Params.Meta)
	switch {
	case metaErr != nil:
		// mcp-go would answer success and make nothing: a client would
		// wait for notifications that never come.
		err = metaErr
	case mcp.IsModernProtocol(meta.ProtocolVersion()):
		return nil // mcp-go answers: 2026-07-28 removed the method
	default:
		err = a.subscribeLegacy(ctx, uri, metaVersion(m.Params.Meta))
	}
	return a.refuseSubscription(ctx, id, err)
}

// refuseSubscription refuses the subscription request id with err, for
// the edges to answer exactly; nil when err is.
func (a *Adapter) refuseSubscription(ctx context.Context, id any, err *rpcError) error {
	if err == nil {
		return nil
	}
	a.live.refused.Add(1)
	if box := errorBoxFrom(ctx); box != nil {
		box.put(id, err)
	}
	return err
}

// subscribeMeta decodes the _meta of a resources/subscribe: absent or null
// is none; anything but an object is invalid params, named. An object
// that mcp.Meta cannot decode (a number past float64 anywhere in it) is
// none as well: mcp-go reads the request's era through mcp.Meta, finds no
// _meta, and serves it as a legacy request, with success.
func subscribeMeta(raw json.RawMessage) (*mcp.Meta, *rpcError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var meta *mcp.Meta
	if json.Unmarshal(raw, &meta) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			return nil, nil
		}
		fe := FieldError{Field: "_meta", Message: "must be an object"}
		return nil, &rpcError{Code: mcp.INVALID_PARAMS, Message: fe.Error(), Data: &ValidationError{Errors: []FieldError{fe}}}
	}
	return meta, nil
}

// subscribeLegacy serves the subscription of a resources/subscribe to uri,
// whose client last saw version want ("" for none): nil when it is made,
// or is one the adapter does not own.
func (a *Adapter) subscribeLegacy(ctx context.Context, uri, want string) *rpcError {
	var err *rpcError
	if rs := a.resolve(ctx, uri); rs != nil {
		rs.want = want
		err = a.live.subscribe(ctx, rs, a.live.openLegacy(ctx, sessionFrom(ctx), want != ""))
	} else if foreign := (foreignURIs{a: a}); !foreign.has(uri) {
		err = notFound(ctx, uri, "")
	}
	return err
}

// metaVersion is the version a resources/subscribe's _meta names
// (MetaVersion); "" for none.
func metaVersion(raw json.RawMessage) string {
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(meta[MetaVersion], &v)
	return v
}
