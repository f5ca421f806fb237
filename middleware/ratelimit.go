package middleware

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// CodeRateLimited is the JSON-RPC error code of a resources/read refused by
// RateLimit; the error's data is {"retryAfterMs": n}. JSON-RPC 2.0 reserves
// -32768 to -32000 for itself and MCP takes its own codes from that range
// too, so an application code has to lie outside it: -31429 does, and ends
// in 429 to recall HTTP's Too Many Requests.
const CodeRateLimited = -31429

// DefaultMaxKeys is the number of buckets a RateLimit keeps when MaxKeys is
// not given.
const DefaultMaxKeys = 10_000

// RateLimitError is the error of a call that RateLimit refused. The command
// did not run. Waiting RetryAfter lets the next call from the same key
// through, unless another call takes the token first.
type RateLimitError struct {
	// Command is the name of the refused command.
	Command string
	// RetryAfter is how long until the bucket holds a token again, rounded
	// up to a whole millisecond.
	RetryAfter time.Duration
}

// Error returns text such as
// "rate limit exceeded for customers_index: retry after 250ms".
// It names nothing but the command, so it is safe to show to the agent.
func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limit exceeded for %s: retry after %v",
		e.Command, ceilMillisecond(e.RetryAfter))
}

// RetryAfterMs returns RetryAfter in whole milliseconds, rounded up, for the
// "retryAfterMs" field of the error's data.
func (e *RateLimitError) RetryAfterMs() int64 {
	return int64(ceilMillisecond(e.RetryAfter) / time.Millisecond)
}

// ceilMillisecond rounds d up to a whole millisecond, and negative d up to
// zero. It saturates instead of overflowing.
func ceilMillisecond(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if r := d % time.Millisecond; r != 0 {
		if d > math.MaxInt64-time.Millisecond {
			return d - r
		}
		d += time.Millisecond - r
	}
	return d
}

// A RateLimitOption configures RateLimit.
type RateLimitOption func(*rateLimitConfig)

type rateLimitConfig struct {
	key     func(ctx context.Context, call *Call) string
	maxKeys int
	now     func() time.Time
	// observe, when set, is given the state of the RateLimit, so that
	// tests can see how many buckets it holds.
	observe func(*buckets)
}

// KeyFunc sets how RateLimit tells callers apart: calls whose key is equal
// share a bucket (per command). The key is used as it is (one longer than 64
// bytes by its SHA-256 sum, so that buckets stay small); an empty key is a
// key like any other, shared by every call that gets it. The default is
// DefaultKey. A typical choice is the authenticated subject, falling back to
// DefaultKey for anonymous calls.
func KeyFunc(f func(ctx context.Context, call *Call) string) RateLimitOption {
	return func(c *rateLimitConfig) {
		if f != nil {
			c.key = f
		}
	}
}

// MaxKeys bounds the number of buckets, one per command and key, that
// RateLimit remembers; n < 1 means DefaultMaxKeys. When a new bucket would
// exceed the bound, the least recently used one is forgotten, which gives its
// key a full bucket on its next call: the bound trades memory for leniency
// towards whoever was forgotten, so size it above the number of callers you
// expect to be active at once.
func MaxKeys(n int) RateLimitOption {
	return func(c *rateLimitConfig) {
		if n < 1 {
			n = DefaultMaxKeys
		}
		c.maxKeys = n
	}
}

// withClock replaces time.Now, so that tests can move time by hand.
func withClock(now func() time.Time) RateLimitOption {
	return func(c *rateLimitConfig) { c.now = now }
}

// withObserver hands the state of the RateLimit to f.
func withObserver(f func(*buckets)) RateLimitOption {
	return func(c *rateLimitConfig) { c.observe = f }
}

// DefaultKey is the key RateLimit uses unless KeyFunc says otherwise:
//
//   - "session:" and the session ID, when the call's session has a
//     non-empty ID (stdio, in-process, legacy Streamable HTTP and SSE);
//   - otherwise "addr:" and the host of the client address in ctx, which is
//     how the clients of stateless Streamable HTTP (protocol 2026-07-28),
//     whose sessions have no ID, are told apart. The address is there only
//     if the transport's handler is wrapped with RemoteAddrHandler or its
//     context function is RemoteAddrContext (see there);
//   - otherwise "", one key shared by every such call.
//
// The port is left out of the address because a client can change it at
// will by opening a new connection. The same holds, over IPv6, for the
// address itself: a host is usually given a whole /64 and may pick any
// address in it, each of which DefaultKey keys apart. Where such clients
// matter, key them by their prefix with a KeyFunc.
//
// A session ID tells clients apart only where the server issued it. On
// legacy Streamable HTTP served stateless (mcp-go's WithStateLess), the ID
// is whatever Mcp-Session-Id header the client sends, unchecked, and a
// client that sends a new one with every request is never limited: there,
// use a KeyFunc that reads the remote address (RemoteAddrFrom) or an
// authenticated subject.
func DefaultKey(ctx context.Context, call *Call) string {
	if call.Session != nil {
		if id := call.Session.SessionID(); id != "" {
			return "session:" + id
		}
	}
	if addr, ok := RemoteAddrFrom(ctx); ok {
		return "addr:" + remoteHost(addr)
	}
	return ""
}

// RateLimit refuses calls that come faster than limit per second, with bursts
// of up to burst calls, from one key to one command. Each command has its own
// bucket per key (see DefaultKey and KeyFunc), so that a busy command does
// not starve the others. A tools/call, a resources/read and a completion of
// the same command pass through the same middleware and so draw on the same
// bucket.
//
// Calls of origin App (the application's own) and Live (re-runs of
// subscriptions, which no agent asked for at that moment) are never limited
// and take no token. A refused call takes no token either, so a client that
// keeps retrying too early is not pushed further back. The refusal is a
// *RateLimitError.
//
// Memory is bounded without a background goroutine: a bucket that has
// refilled is the same as a new one and is dropped by a sweep that runs once
// there have been as many calls as buckets since the previous sweep, which
// keeps its cost constant per call; beyond MaxKeys the least recently used
// bucket is dropped.
//
// The buckets belong to the returned Middleware value: every handler it wraps
// draws on them, keyed by command name, so apply one value to all commands
// and call RateLimit again only for a separate set of limits.
//
// A limit of rate.Inf (or math.Inf(1)) disables limiting. RateLimit panics if limit is not
// positive or burst is less than 1, since no call could ever pass.
//
// To limit an adapter's commands, use adapter.WithRateLimit: it installs
// RateLimit innermost in the adapter's chain, where your own middleware
// sees the calls it refuses. RateLimit itself is for chains of your own.
func RateLimit(limit rate.Limit, burst int, opts ...RateLimitOption) Middleware {
	// !(limit > 0) rather than limit <= 0: a NaN limit compares false
	// with everything, and x/time/rate would let every call through.
	if !(limit > 0) || burst < 1 {
		panic(fmt.Sprintf("middleware.RateLimit: limit %v and burst %d let no call through; want limit > 0 and burst >= 1", limit, burst))
	}
	cfg := rateLimitConfig{key: DefaultKey, maxKeys: DefaultMaxKeys, now: time.Now}
	for _, opt := range opts {
		opt(&cfg)
	}
	// >= rather than ==: math.Inf(1) lies above rate.Inf (the largest
	// float64) and means the same, but x/time/rate does not know it as
	// Inf, and its buckets, whose tokens turn NaN, would never be freed.
	if limit >= rate.Inf {
		return func(next Handler) Handler { return next }
	}
	// The state belongs to the Middleware value, not to each handler it
	// wraps: however often the adapter applies it (once for tools/call and
	// once for resources/read, say), calls of one command meet in one bucket.
	b := newBuckets(limit, burst, cfg.maxKeys)
	if cfg.observe != nil {
		cfg.observe(b)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, call *Call) (any, error) {
			if call.Origin == App || call.Origin == Live {
				return next(ctx, call)
			}
			wait, ok := b.take(bucketKey{call.Command, boundedKey(cfg.key(ctx, call))}, cfg.now())
			if !ok {
				return nil, &RateLimitError{Command: call.Command, RetryAfter: wait}
			}
			return next(ctx, call)
		}
	}
}

type bucketKey struct{ command, key string }

// maxKeyLen is the longest key a bucket holds as it is.
const maxKeyLen = 64

// boundedKey is key, or, if it is longer than maxKeyLen, "sha256:" and its
// SHA-256 sum. A bucket outlives its call, and a key can be the client's
// to choose (on stateless legacy Streamable HTTP the session ID is the
// Mcp-Session-Id header the client sends, unchecked; a KeyFunc may read a
// token): without a bound on each key, MaxKeys buckets could hold MaxKeys
// times the largest header the server accepts. Hashing rather than cutting
// keeps long keys that differ only at the end apart.
func boundedKey(key string) string {
	if len(key) <= maxKeyLen {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + string(sum[:])
}

type bucket struct {
	key bucketKey
	lim *rate.Limiter
}

// buckets is the state of one RateLimit: the limiters by key, and the same
// limiters in least-recently-used order (front is newest) for eviction.
type buckets struct {
	limit   rate.Limit
	burst   int
	maxKeys int

	mu         sync.Mutex
	byKey      map[bucketKey]*list.Element // of *bucket
	lru        list.List
	sinceSweep int
}

func newBuckets(limit rate.Limit, burst, maxKeys int) *buckets {
	return &buckets{limit: limit, burst: burst, maxKeys: maxKeys, byKey: make(map[bucketKey]*list.Element)}
}

// take spends a token of k's bucket at time now. If there is none, it spends
// nothing and reports how long until there is one.
func (b *buckets) take(k bucketKey, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()

	b.sinceSweep++
	if b.sinceSweep >= max(len(b.byKey), 64) {
		b.sweep(now)
	}

	var lim *rate.Limiter
	if el, ok := b.byKey[k]; ok {
		b.lru.MoveToFront(el)
		lim = el.Value.(*bucket).lim
	} else {
		for len(b.byKey) >= b.maxKeys {
			oldest := b.lru.Back()
			b.lru.Remove(oldest)
			delete(b.byKey, oldest.Value.(*bucket).key)
		}
		lim = rate.NewLimiter(b.limit, b.burst)
		b.byKey[k] = b.lru.PushFront(&bucket{key: k, lim: lim})
	}

	// AllowN changes nothing when it refuses, so a refused call is free.
	if lim.AllowN(now, 1) {
		return 0, true
	}
	return b.untilToken(lim.TokensAt(now)), false
}

// untilToken is the time the bucket needs to grow from tokens to one,
// rounded up to a whole millisecond so that waiting that long is enough.
func (b *buckets) untilToken(tokens float64) time.Duration {
	ns := math.Ceil((1 - tokens) / float64(b.limit) * float64(time.Second))
	if ns >= math.MaxInt64 {
		return ceilMillisecond(math.MaxInt64)
	}
	// At least a millisecond: a refusal that says "retry after 0s" would
	// invite the client to hammer.
	return ceilMillisecond(time.Duration(max(ns, 1)))
}

// sweep drops every bucket that has refilled: it is indistinguishable from
// the one a new call would create.
func (b *buckets) sweep(now time.Time) {
	b.sinceSweep = 0
	full := float64(b.burst)
	for el := b.lru.Front(); el != nil; {
		next := el.Next()
		if bk := el.Value.(*bucket); bk.lim.TokensAt(now) >= full {
			b.lru.Remove(el)
			delete(b.byKey, bk.key)
		}
		el = next
	}
}

// len reports the number of buckets; tests use it.
func (b *buckets) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byKey)
}
