package adapter

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/time/rate"

	"github.com/mcplive/adapter/middleware"
)

// An Option configures Wrap.
type Option func(*config)

type config struct {
	scheme          string
	grant           func(ctx context.Context, command string) bool
	subscriptionCap int
	// clientSubscriptionCap and clientKey: the cap per client, across
	// connections, and how clients are told apart.
	clientSubscriptionCap int
	clientKey             func(ctx context.Context, call *middleware.Call) string
	middleware            []middleware.Middleware
	rateLimit             rate.Limit
	rateBurst             int
	rateOpts              []middleware.RateLimitOption
	logger                *slog.Logger
	completion            server.ResourceCompletionProvider
	feed                  ChangeFeed
	rerunTimeout          time.Duration
	// observer is told of reads, calls, re-runs and notifications; nil
	// for none (observe.go).
	observer Observer
	// scope decides whose a live query is; nil for one scope shared by all.
	scope func(ctx context.Context) (string, error)
	// keptBudget and keptMax bound the kept results (kept.go):
	// WithKeptResults.
	keptBudget, keptMax int
	// identity names who a request is (WithIdentity); nil for no one.
	// clientKeySet: WithClientKey was given, and keys the client cap
	// whatever the identity.
	identity     func(ctx context.Context) string
	clientKeySet bool
}

// DefaultSubscriptionCap is the number of subscriptions one connection may
// hold unless WithSubscriptionCap says otherwise.
const DefaultSubscriptionCap = 64

// DefaultRerunTimeout is how long a re-run of a live query may take unless
// WithRerunTimeout says otherwise.
const DefaultRerunTimeout = 30 * time.Second

// DefaultClientSubscriptionCap is the number of subscriptions one client
// may hold across all its connections unless WithClientSubscriptionCap says
// otherwise.
const DefaultClientSubscriptionCap = 256

// DefaultKeptResultsBudget is how many bytes of results the live queries
// keep, all together, to answer reads with, unless WithKeptResults says
// otherwise.
const DefaultKeptResultsBudget = 64 << 20

// DefaultKeptResultMax is the size of the largest result a live query
// keeps unless WithKeptResults says otherwise: a larger one is answered by
// running its command for each read.
const DefaultKeptResultMax = 1 << 20

func defaultConfig() config {
	return config{
		keptBudget:            DefaultKeptResultsBudget,
		keptMax:               DefaultKeptResultMax,
		scheme:                "app",
		subscriptionCap:       DefaultSubscriptionCap,
		clientSubscriptionCap: DefaultClientSubscriptionCap,
		clientKey:             middleware.DefaultKey,
		rerunTimeout:          DefaultRerunTimeout,
		logger:                slog.Default(),
	}
}

func (c *config) validate() error {
	if !validScheme(c.scheme) {
		return fmt.Errorf("URI scheme %q: want a letter followed by letters, digits, '+', '-' or '.' (RFC 3986)", c.scheme)
	}
	if c.subscriptionCap < 1 {
		return fmt.Errorf("subscription cap %d: want at least 1", c.subscriptionCap)
	}
	if c.rerunTimeout <= 0 {
		return fmt.Errorf("re-run timeout %v: want more than 0", c.rerunTimeout)
	}
	if c.clientSubscriptionCap < 1 {
		return fmt.Errorf("client subscription cap %d: want at least 1", c.clientSubscriptionCap)
	}
	if c.keptBudget < 0 || c.keptMax < 0 {
		return fmt.Errorf("kept results: budget %d, largest %d: want sizes of 0 or more", c.keptBudget, c.keptMax)
	}
	// !(c.rateLimit >= 0) rather than c.rateLimit < 0: a NaN limit
	// compares false with everything and would leave the adapter
	// unlimited without a word.
	if !(c.rateLimit >= 0) || c.rateLimit > 0 && c.rateBurst < 1 {
		return fmt.Errorf("rate limit %v with burst %d: want a limit of at least 0 and, with a limit, a burst of at least 1", c.rateLimit, c.rateBurst)
	}
	return nil
}

// chain composes the middleware every invocation passes: panic recovery
// outermost, so that a panic anywhere becomes an internal error; then the
// user's middleware in the order given; then the rate limit, innermost, so
// that the user's middleware sees refused calls too.
func (c *config) chain() middleware.Middleware {
	mws := []middleware.Middleware{middleware.Recover(c.logger)}
	mws = append(mws, c.middleware...)
	if c.rateLimit > 0 {
		mws = append(mws, middleware.RateLimit(c.rateLimit, c.rateBurst, c.rateOpts...))
	}
	return middleware.Chain(mws...)
}

// WithScheme sets the URI scheme of the adapter's resources and templates
// ("app" by default: app://customers_show/{id}).
func WithScheme(scheme string) Option {
	return func(c *config) { c.scheme = scheme }
}

// WithGrant sets the function that decides, per request, which commands the
// agent may use. An ungranted command is absent from tools/list,
// resources/list, resources/templates/list and completion, and calling,
// reading, subscribing to or completing it answers exactly as for a name that
// does not exist. (Exactly, byte for byte, through the adapter's edges:
// HTTPHandler, ServeStdio, HandleMessage. Over plain mcp-go transports,
// mcp-go answers an unknown name itself, without the data.uri an ungranted
// one has.) ctx is the request's: server.ClientSessionFromContext(ctx)
// gives the session, and the HTTP context function the user installed on
// their transport may have put an authenticated subject there.
//
// A subscription's query is re-run on behalf of whoever subscribed. With
// WithScope, where a query belongs to one scope and re-runs with the
// values of the request that made it, the grant is asked again, with those
// values, before every re-run: a re-run it refuses does not run the
// command, and its subscribers hear once that the result changed (a read
// now fails), then nothing more until the grant is given back. Without a
// scope, a query may serve sessions of different callers; the grant is
// asked when each subscribes.
//
// A grant function that panics grants nothing; the panic is logged. By
// default every command is granted.
func WithGrant(grant func(ctx context.Context, command string) bool) Option {
	return func(c *config) { c.grant = grant }
}

// WithScope sets the function that decides whose data a request of a live
// command sees: a user, a tenant, a team, any string the application keys
// its data by. It is asked, with the request's context, on every read,
// tools/call and subscription (subscriptions/listen, resources/subscribe)
// of a live command.
//
// Subscriptions share a query, and its re-runs, only when their command,
// canonical arguments and scope are all equal: a change that alters what
// one scope sees notifies that scope's subscribers and nobody else's, and
// clients of one scope share one re-run. A query re-runs with a context
// that carries the values of the request that made it (its cancellation
// and deadline left out), so that the command reads its user or tenant
// from ctx exactly as it does in a read; and the grant (WithGrant) is asked
// again, with that context, before every re-run.
//
//	adapter.WithScope(func(ctx context.Context) (string, error) {
//		user, ok := userFrom(ctx) // put there by your authentication
//		if !ok {
//			return "", errors.New("sign in first")
//		}
//		return user.TenantID, nil
//	})
//
// An error refuses the request with -32600 and the error's message, and
// the command does not run: a read and a tools/call answer it, a
// resources/subscribe or subscriptions/listen subscribes nothing. A scope
// function that panics refuses the request likewise; the panic is logged.
// The scope never leaves the process: LiveQueries, the debug page, logs
// and metrics show an opaque tag in its place.
//
// Without WithScope, every request is in one scope: a query's result must
// depend on its arguments and the data only, and re-runs carry no value of
// any request.
func WithScope(scope func(ctx context.Context) (string, error)) Option {
	return func(c *config) { c.scope = scope }
}

// WithIdentity sets the function that names who a request is: the user,
// the client or the service account your authentication put in the
// request's context, as a string that stays the same for as long as they
// do (a token's subject, a user ID, never the token), or "" for a request
// that carries no identity. It is not the scope (WithScope): the users of
// one tenant share a scope, and each is an identity of their own.
//
// Through HTTPHandler, a Streamable HTTP session (protocol versions before
// 2026-07-28) belongs to the identity of the request that opened it, as
// MCP's security best practices ask of servers that have sessions: a
// session ID that leaks (a log line, a proxy, a shared screen) is of no
// use to anyone else. Every later request that names the session (a POST,
// its GET stream, a DELETE) from another identity, or from none when it
// had one, is answered as a session the server does not know: 404 "Invalid
// session ID", as mcp-go answers a POST with an unknown session ID. Such a
// request reaches nothing: the session, its subscriptions, its streams and
// its idle timer stay as they were. It is logged at warn, without either
// identity, and counted (LiveStats.ForeignSessionRequests). A session
// opened without an identity serves requests without one only.
//
// On stateless Streamable HTTP (2026-07-28), which has no sessions,
// HTTPHandler answers notifications/cancelled itself: it cancels the
// requests in flight of the same identity with that ID, and nobody
// else's, so that one user cannot end another's subscriptions/listen
// stream by guessing its request ID.
//
// The cap of WithClientSubscriptionCap counts the subscriptions of one
// identity together, across all its sessions and listen streams, unless
// WithClientKey says how to tell clients apart; requests without an
// identity are told apart as before.
//
// HTTPHandler asks identity with the context of the *http.Request, before
// mcp-go sees the request: put the identity there with middleware in front
// of HTTPHandler, not with mcp-go's server.WithHTTPContextFunc, which runs
// too late for it. Sessions remember their owner in this process: behind a
// load balancer, keep each session on the instance that opened it (sticky
// sessions), as sessions need anyway. An identity function that panics
// fails the request with an internal error; the panic is logged.
func WithIdentity(identity func(ctx context.Context) string) Option {
	return func(c *config) { c.identity = identity }
}

// WithSubscriptionCap sets how many subscriptions one connection may hold
// (DefaultSubscriptionCap by default). A connection is the listen stream on
// stateless Streamable HTTP (protocol 2026-07-28) and the session
// elsewhere. Subscriptions beyond it are not acknowledged
// (subscriptions/listen) or refused with -32600 (resources/subscribe).
func WithSubscriptionCap(n int) Option {
	return func(c *config) { c.subscriptionCap = n }
}

// WithClientSubscriptionCap sets how many subscriptions one client may
// hold across all its connections (DefaultClientSubscriptionCap by
// default). It matters where a client can open connections at will: on
// stateless Streamable HTTP (protocol 2026-07-28) every listen stream is a
// connection of its own, each with the cap of WithSubscriptionCap. Clients
// are told apart as WithClientKey says. Subscriptions beyond the cap are
// not acknowledged (subscriptions/listen) or refused (resources/subscribe).
func WithClientSubscriptionCap(n int) Option {
	return func(c *config) { c.clientSubscriptionCap = n }
}

// WithClientKey sets how the adapter tells clients apart for
// WithClientSubscriptionCap: subscriptions whose key is equal count
// against one cap. By default a request with an identity (WithIdentity)
// is keyed by it, and any other by middleware.DefaultKey: the session ID,
// or on stateless HTTP the client's address (HTTPHandler puts it in the
// context). It has the signature of middleware.KeyFunc's function, so that
// one function can key both the rate limit and the cap, the authenticated
// subject for one. call carries the session and the command, with origin
// Agent.
func WithClientKey(key func(ctx context.Context, call *middleware.Call) string) Option {
	return func(c *config) {
		if key != nil {
			c.clientKey, c.clientKeySet = key, true
		}
	}
}

// WithRerunTimeout bounds each re-run of a live query
// (DefaultRerunTimeout by default): its context ends after d. A re-run
// still running then counts as failed, whatever it returns: it is logged,
// its subscribers hear nothing, and the query runs again on the next
// change. A batched re-run (WithBatch) is bounded as a whole, and all its
// argument sets count as late. Reads and first runs of subscriptions are bounded by their
// request instead, as any tools/call is.
func WithRerunTimeout(d time.Duration) Option {
	return func(c *config) { c.rerunTimeout = d }
}

// WithMiddleware appends middleware to the chain every command invocation
// passes (see package middleware). The first given is the outermost. Each
// command's handlers are wrapped once, when it is declared, so state a
// middleware keeps in the handler it returns lasts as long as the command.
//
// A middleware that changes results (redacts a field, say) must change
// them whatever the call's origin, re-runs (origin Live) included: a
// re-run's result is what the reads its notification causes are answered
// with (WithKeptResults), and those reads pass the chain with a
// middleware.KeptResult in its place. One that changes results for some
// callers only needs a scope (WithScope) that tells them apart, or its
// commands' WithoutKeptResults.
func WithMiddleware(mws ...middleware.Middleware) Option {
	return func(c *config) { c.middleware = append(c.middleware, mws...) }
}

// WithRateLimit limits each command to limit invocations per second with
// bursts of burst, per session (per remote address on stateless HTTP, or
// per key of middleware.KeyFunc among opts). A tools/call, a read and a
// completion of the same command share one bucket; re-runs of live queries
// and Adapter.Call are exempt. An exceeded limit answers a JSON-RPC error
// with code middleware.CodeRateLimited and data {"retryAfterMs": n}, or, for
// a tools/call, an isError result saying the same. A limit of 0 limits
// nothing; Wrap panics on a negative or NaN limit, and on a burst below 1
// with a positive limit.
func WithRateLimit(limit rate.Limit, burst int, opts ...middleware.RateLimitOption) Option {
	return func(c *config) {
		c.rateLimit, c.rateBurst, c.rateOpts = limit, burst, opts
	}
}

// WithLogger sets the logger of the adapter's own events (internal errors,
// recovered panics, feed failures). slog.Default() by default.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) {
		if logger != nil {
			c.logger = logger
		}
	}
}

// WithCompletionFallback hands completion requests for references the
// adapter does not own (the user's own resource templates) to p. mcp-go
// keeps a single resource completion provider and Wrap installs its own, so
// pass here the provider you would otherwise have given mcp-go.
func WithCompletionFallback(p server.ResourceCompletionProvider) Option {
	return func(c *config) { c.completion = p }
}

// WithChangeFeed connects the adapter to other instances through feed (see
// ChangeFeed): changes heard from elsewhere re-run local live queries, and
// local Changed calls are published.
func WithChangeFeed(feed ChangeFeed) Option {
	return func(c *config) { c.feed = feed }
}

// WithKeptResults bounds the results that live queries keep to answer
// reads with (see Adapter.Changed): budget bytes in all, and none larger
// than max bytes. When a result would not fit, the results read least
// recently are let go first; a result larger than max is never kept, and
// its reads run the command. A budget or a max of 0 keeps nothing: every
// read runs its command. The defaults are DefaultKeptResultsBudget and
// DefaultKeptResultMax; LiveStats tells how much is kept.
func WithKeptResults(budget, max int) Option {
	return func(c *config) { c.keptBudget, c.keptMax = budget, max }
}

// WithObserver has the adapter tell o of every read of its URIs, every
// tools/call of its commands, every re-run of a live query and every batch
// of notifications it queues (see Observer), for metrics and traces.
// github.com/mcplive/adapter/otel provides one on OpenTelemetry. Without
// it (or with a nil o) nothing is observed, at no cost.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o }
}

func validScheme(s string) bool {
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(isAlpha(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// A CommandOption configures one command declared with Live or Command.
type CommandOption func(*commandConfig)

type commandConfig struct {
	confirm      bool
	reads        []string
	completers   map[string]Completer
	title        string
	noStructured bool
	batch        batchDecl
	// cacheTTL is WithCacheTTL's, hasTTL that it was given; publicCache
	// is WithPublicCache.
	cacheTTL    time.Duration
	hasTTL      bool
	publicCache bool
	// notifyEvery is WithNotifyInterval's; 0 for no pacing.
	notifyEvery time.Duration
	hasInterval bool
	// noKept is WithoutKeptResults.
	noKept bool
}

// WithTitle gives the command a title: a short name for people, which
// clients show instead of the command's name. It is the tool's title, and
// the title of the command's resource and template.
func WithTitle(title string) CommandOption {
	return func(c *commandConfig) { c.title = title }
}

// WithoutStructuredOutput makes the tool answer with JSON text only. By
// default a tool whose result type R is a struct publishes R's schema as
// its outputSchema, every tool whose result is a JSON object answers
// with that object as structuredContent too, beside the text, and a live
// command with a template adds a resource_link to the URI of its
// arguments. Clients that choke on any of them can be served without all.
func WithoutStructuredOutput() CommandOption {
	return func(c *commandConfig) { c.noStructured = true }
}

// NeedsConfirmation marks a command whose use a person must confirm. Such a
// command is a tool only, never a resource or a template, since a read or a
// subscription cannot ask anyone.
func NeedsConfirmation() CommandOption {
	return func(c *commandConfig) { c.confirm = true }
}

// WithReads declares keys a live command always reads, in addition to what
// each run reports with Reads. A command whose read set does not depend on
// its arguments can declare it here once.
func WithReads(keys ...string) CommandOption {
	return func(c *commandConfig) { c.reads = append(c.reads, keys...) }
}

// WithCacheTTL says how long an agent may keep a read of the command's
// URIs (its expanded URIs and its plain resource) before it reads again:
// on protocol 2026-07-28, where every read carries cache hints, such a
// read says ttlMs = d. Give the time within which a stale answer does no
// harm; a subscription still hears of every change as it happens (or as
// WithNotifyInterval paces it), so an agent that watches a URI can keep
// its read until told otherwise.
//
// The read's cacheScope is private, so that only the caller's own client
// reuses it, unless the command says WithPublicCache and the adapter has
// neither a grant (WithGrant) nor a scope (WithScope): either can make
// two callers' answers differ, and a shared cache would hand one
// caller's answer to another. Reads of a command with neither option take
// the server's default (server.WithCacheHints; mcp-go's own is private,
// ttlMs 0), but for cacheScope private with ttlMs 0 where a grant or a
// scope applies. Reads on earlier protocol versions carry no hints.
//
// d must be 0 or more, in whole milliseconds, since ttlMs counts them.
// Live panics on a d that is not, and on WithCacheTTL given to a command
// that has no URI template (Command, NeedsConfirmation, arguments a
// template cannot hold: Inspect says why), which nothing reads.
func WithCacheTTL(d time.Duration) CommandOption {
	return func(c *commandConfig) { c.cacheTTL, c.hasTTL = d, true }
}

// WithPublicCache marks the command's answers as the same for every
// caller: on protocol 2026-07-28 its reads say cacheScope public, so that
// any client, and a cache shared between users, may reuse them (for
// WithCacheTTL's time; without it ttlMs is 0: reuse after asking again).
// It has no effect when the adapter has a grant (WithGrant) or a scope
// (WithScope): reads then say private, since either can make the answers
// of two callers differ. Live panics on WithPublicCache given to a command
// without a URI template.
func WithPublicCache() CommandOption {
	return func(c *commandConfig) { c.publicCache = true }
}

// WithNotifyInterval paces the command's notifications: each
// subscription of it hears at most one notifications/resources/updated per
// d. A change that comes sooner after the last notification is not
// dropped but delayed: the notification goes out when d has passed since
// the last, however many changes came meanwhile, so the last change is
// always announced, at most d late. Changes are re-run as ever (a burst
// still costs at most one more run of each query, in a batch with
// WithBatch, in its own scope with WithScope); only the notification
// waits. Subscriptions that share a query (the same arguments, in the same
// scope) are paced together.
//
// Pace a command whose data changes faster than an agent needs to hear of
// it: every notification can cost the agent a read and the tokens of its
// answer, and a ticker written fifty times a second would otherwise ask
// for fifty reads a second. docs/watching.md has the figures.
//
// The interval is counted from when a notification is queued for its
// session; delivery itself may add the few milliseconds a burst is held
// for its round of re-runs. WaitIdle counts a delayed notification as
// work, and Close sends those still delayed at once. While nothing is
// delayed, pacing costs nothing: no timer runs.
//
// d of 0 paces nothing. Live panics on a negative d, and on
// WithNotifyInterval given to a command without a URI template, which
// nothing can watch.
func WithNotifyInterval(d time.Duration) CommandOption {
	return func(c *commandConfig) { c.notifyEvery, c.hasInterval = d, true }
}

// WithoutKeptResults has every read and tools/call of the command run it,
// never answered from the result its live query keeps (see
// Adapter.Changed). Give it to a command whose result may change without a
// write that calls Changed: one that reads a clock, a remote service, or
// data that other programs change without telling a change feed.
func WithoutKeptResults() CommandOption {
	return func(c *commandConfig) { c.noKept = true }
}

// check checks WithCacheTTL, WithPublicCache and WithNotifyInterval of
// the command named name; tmpl is its template, nil
// with the reason there is none (detail names the argument).
func (cc *commandConfig) check(name string, tmpl *uriTemplate, reason Reason, detail string) error {
	if cc.hasTTL && (cc.cacheTTL < 0 || cc.cacheTTL%time.Millisecond != 0) {
		return fmt.Errorf("command %q: WithCacheTTL(%v): want a duration of 0 or more in whole milliseconds (ttlMs counts them)", name, cc.cacheTTL)
	}
	if cc.hasInterval && cc.notifyEvery < 0 {
		return fmt.Errorf("command %q: WithNotifyInterval(%v): want a duration of 0 (no pacing) or more", name, cc.notifyEvery)
	}
	if tmpl != nil {
		return nil
	}
	var opt string
	switch {
	case cc.hasTTL:
		opt = "WithCacheTTL"
	case cc.publicCache:
		opt = "WithPublicCache"
	case cc.hasInterval:
		opt = "WithNotifyInterval"
	default:
		return nil
	}
	why := reason.Description()
	if detail != "" {
		why += " (" + detail + ")"
	}
	return fmt.Errorf("command %q: %s on a command without a URI template, which nothing reads or watches: %s", name, opt, why)
}
