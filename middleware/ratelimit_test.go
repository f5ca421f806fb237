package middleware

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// limited is a handler behind a RateLimit on a fake clock, counting the
// calls that reach the command.
type limited struct {
	t     *testing.T
	clock *fakeClock
	state *buckets
	h     Handler
	ran   atomic.Int64
}

func newLimited(t *testing.T, limit rate.Limit, burst int, opts ...RateLimitOption) *limited {
	t.Helper()
	l := &limited{t: t, clock: newFakeClock()}
	opts = append(opts, withClock(l.clock.Now), withObserver(func(b *buckets) { l.state = b }))
	l.h = RateLimit(limit, burst, opts...)(func(context.Context, *Call) (any, error) {
		l.ran.Add(1)
		return "ok", nil
	})
	return l
}

// agent calls command as an agent of the session with the given ID.
func (l *limited) agent(command, session string) error {
	return l.call(context.Background(), &Call{Command: command, Origin: Agent, Session: &fakeSession{id: session}})
}

func (l *limited) call(ctx context.Context, call *Call) error {
	_, err := l.h(ctx, call)
	return err
}

// refused asserts that err is a *RateLimitError for command with the given
// RetryAfter, and returns it.
func refused(t *testing.T, err error, command string, retryAfter time.Duration) *RateLimitError {
	t.Helper()
	var rl *RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("err = %v, want a *RateLimitError", err)
	}
	if rl.Command != command {
		t.Errorf("Command = %q, want %q", rl.Command, command)
	}
	if retryAfter >= 0 && rl.RetryAfter != retryAfter {
		t.Errorf("RetryAfter = %v, want %v", rl.RetryAfter, retryAfter)
	}
	if rl.RetryAfter <= 0 {
		t.Errorf("RetryAfter = %v, want > 0", rl.RetryAfter)
	}
	return rl
}

func TestRateLimitBurstThenRefuse(t *testing.T) {
	l := newLimited(t, 4, 3)
	for i := range 3 {
		if err := l.agent("customers_index", "s1"); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	err := l.agent("customers_index", "s1")
	rl := refused(t, err, "customers_index", 250*time.Millisecond)
	if got, want := err.Error(), "rate limit exceeded for customers_index: retry after 250ms"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := rl.RetryAfterMs(); got != 250 {
		t.Errorf("RetryAfterMs() = %d, want 250", got)
	}
	if got := l.ran.Load(); got != 3 {
		t.Errorf("command ran %d times, want 3: a refused call must not run", got)
	}
}

func TestRateLimitRefills(t *testing.T) {
	l := newLimited(t, 4, 1) // a token every 250ms
	if err := l.agent("c", "s"); err != nil {
		t.Fatal(err)
	}
	l.clock.Advance(100 * time.Millisecond)
	refused(t, l.agent("c", "s"), "c", 150*time.Millisecond)
	l.clock.Advance(150 * time.Millisecond)
	if err := l.agent("c", "s"); err != nil {
		t.Fatalf("after the RetryAfter: %v", err)
	}
	refused(t, l.agent("c", "s"), "c", 250*time.Millisecond)

	// A long pause refills up to the burst, not beyond.
	l.clock.Advance(time.Hour)
	if err := l.agent("c", "s"); err != nil {
		t.Fatal(err)
	}
	refused(t, l.agent("c", "s"), "c", 250*time.Millisecond)
}

func TestRateLimitRefusedCallDoesNotConsume(t *testing.T) {
	l := newLimited(t, 1, 2) // a token a second
	for range 2 {
		if err := l.agent("c", "s"); err != nil {
			t.Fatal(err)
		}
	}
	// A client that keeps retrying too early is not pushed back: every
	// refusal quotes the same wait.
	for range 10 {
		refused(t, l.agent("c", "s"), "c", time.Second)
	}
	l.clock.Advance(time.Second)
	if err := l.agent("c", "s"); err != nil {
		t.Fatalf("one second after the burst, refused calls in between: %v", err)
	}
	refused(t, l.agent("c", "s"), "c", time.Second)
}

func TestRateLimitBucketsAreIndependent(t *testing.T) {
	session := func(id string) *Call {
		return &Call{Command: "c", Origin: Agent, Session: &fakeSession{id: id}}
	}
	stateless := func(command, addr string) (context.Context, *Call) {
		ctx := context.Background()
		if addr != "" {
			ctx = ContextWithRemoteAddr(ctx, addr)
		}
		return ctx, &Call{Command: command, Origin: Agent, Session: &fakeSession{}}
	}
	bg := context.Background()
	type call struct {
		ctx  context.Context
		call *Call
	}
	at := func(ctx context.Context, c *Call) call { return call{ctx, c} }

	tests := []struct {
		name        string
		first, then call
		independent bool
	}{
		{"two sessions", at(bg, session("a")), at(bg, session("b")), true},
		{"one session", at(bg, session("a")), at(bg, session("a")), false},
		{"two commands", at(bg, &Call{Command: "x", Origin: Agent, Session: &fakeSession{id: "a"}}),
			at(bg, &Call{Command: "y", Origin: Agent, Session: &fakeSession{id: "a"}}), true},
		{"stateless, two hosts", at(stateless("c", "192.0.2.1:1000")), at(stateless("c", "192.0.2.2:1000")), true},
		{"stateless, one host, two ports", at(stateless("c", "192.0.2.1:1000")), at(stateless("c", "192.0.2.1:2000")), false},
		{"stateless, IPv6", at(stateless("c", "[2001:db8::1]:1000")), at(stateless("c", "[2001:db8::1]:2000")), false},
		{"stateless, no address", at(stateless("c", "")), at(stateless("c", "")), false},
		{"session ID and address do not collide", at(bg, session("192.0.2.1")), at(stateless("c", "192.0.2.1:1")), true},
		{"no session", at(bg, &Call{Command: "c", Origin: Agent}), at(stateless("c", "")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimited(t, 1, 1)
			if err := l.call(tt.first.ctx, tt.first.call); err != nil {
				t.Fatal(err)
			}
			err := l.call(tt.then.ctx, tt.then.call)
			if tt.independent && err != nil {
				t.Errorf("second call refused, want its own bucket: %v", err)
			}
			if !tt.independent {
				refused(t, err, tt.then.call.Command, time.Second)
			}
		})
	}
}

func TestRateLimitExemptOrigins(t *testing.T) {
	for _, o := range []Origin{App, Live} {
		t.Run(o.String(), func(t *testing.T) {
			l := newLimited(t, 1, 2)
			s := &fakeSession{id: "s"}
			for i := range 100 {
				if err := l.call(context.Background(), &Call{Command: "c", Origin: o, Session: s}); err != nil {
					t.Fatalf("call %d of origin %v: %v", i+1, o, err)
				}
			}
			// They took nothing from the agent's bucket of the same key.
			for i := range 2 {
				if err := l.agent("c", "s"); err != nil {
					t.Fatalf("agent call %d after %v calls: %v", i+1, o, err)
				}
			}
			refused(t, l.agent("c", "s"), "c", time.Second)
		})
	}
}

func TestRateLimitKeyFunc(t *testing.T) {
	type subjectKey struct{}
	l := newLimited(t, 1, 1, KeyFunc(func(ctx context.Context, call *Call) string {
		s, _ := ctx.Value(subjectKey{}).(string)
		return s
	}))
	ada := context.WithValue(context.Background(), subjectKey{}, "ada")
	bob := context.WithValue(context.Background(), subjectKey{}, "bob")
	// Different sessions of one subject share its bucket.
	if err := l.call(ada, &Call{Command: "c", Origin: Agent, Session: &fakeSession{id: "1"}}); err != nil {
		t.Fatal(err)
	}
	refused(t, l.call(ada, &Call{Command: "c", Origin: Agent, Session: &fakeSession{id: "2"}}), "c", time.Second)
	if err := l.call(bob, &Call{Command: "c", Origin: Agent, Session: &fakeSession{id: "1"}}); err != nil {
		t.Errorf("another subject: %v", err)
	}
}

func TestRateLimitStateIsBounded(t *testing.T) {
	const maxKeys = 100
	l := newLimited(t, 1, 1, MaxKeys(maxKeys))
	for i := range 10_000 {
		if err := l.agent("c", strconv.Itoa(i)); err != nil {
			t.Fatalf("first call of key %d: %v", i, err)
		}
		if n := l.state.len(); n > maxKeys {
			t.Fatalf("after %d keys: %d buckets, want <= %d", i+1, n, maxKeys)
		}
	}
	// The most recent key is remembered, with its bucket spent ...
	refused(t, l.agent("c", "9999"), "c", time.Second)
	// ... and the least recent was forgotten: it starts afresh.
	if err := l.agent("c", "0"); err != nil {
		t.Errorf("forgotten key: %v", err)
	}
}

// TestRateLimitKeySizeIsBounded: keys can come from the client (on
// stateless legacy Streamable HTTP the session ID is whatever header the
// client sends), and a bucket outlives its call, so what the buckets hold
// per key must not grow with the key. Long keys must still stay apart.
func TestRateLimitKeySizeIsBounded(t *testing.T) {
	const huge = 1 << 20 // net/http's default MaxHeaderBytes
	tests := []struct {
		name    string
		session string
		maxHeld int // bytes of key the bucket may hold
	}{
		{"short key kept", "abc", len("session:abc")},
		{"huge key", strings.Repeat("x", huge), 64},
		{"huge key, last byte differs", strings.Repeat("x", huge-1) + "y", 64},
	}
	l := newLimited(t, 1, 1)
	want := 0 // the bytes the buckets may hold so far
	for _, tt := range tests {
		want += tt.maxHeld
		t.Run(tt.name, func(t *testing.T) {
			// Each is a new key: the first call passes, the second not.
			if err := l.agent("c", tt.session); err != nil {
				t.Fatalf("first call: %v", err)
			}
			refused(t, l.agent("c", tt.session), "c", time.Second)
			held := 0
			l.state.mu.Lock()
			for k := range l.state.byKey {
				held += len(k.key)
			}
			l.state.mu.Unlock()
			if held > want {
				t.Errorf("the buckets hold %d bytes of keys, want at most %d", held, want)
			}
		})
	}
}

func TestRateLimitFreesIdleBuckets(t *testing.T) {
	l := newLimited(t, 10, 1, MaxKeys(1000))
	for i := range 50 {
		if err := l.agent("c", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.state.len(); n != 50 {
		t.Fatalf("%d buckets, want 50", n)
	}
	// A tenth of a second refills every bucket; one busy key keeps calling
	// until a sweep drops the idle ones. Sweeps cost at most a bucket per
	// call, so one is due within max(buckets, 64) calls.
	l.clock.Advance(100 * time.Millisecond)
	for i := 0; l.state.len() > 1; i++ {
		if i > 64 {
			t.Fatalf("after %d calls, %d buckets remain, want 1", i, l.state.len())
		}
		_ = l.agent("busy", "b")
	}
	// The busy key's bucket is spent, so it stays.
	refused(t, l.agent("busy", "b"), "busy", 100*time.Millisecond)
}

func TestRateLimitConcurrent(t *testing.T) {
	l := newLimited(t, 1, 5, MaxKeys(8))
	var wg sync.WaitGroup
	var passed atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				if l.agent(fmt.Sprint("c", i%3), fmt.Sprint("s", g%4)) == nil {
					passed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := l.state.len(); n > 8 {
		t.Errorf("%d buckets, want <= 8", n)
	}
	if passed.Load() != l.ran.Load() {
		t.Errorf("%d calls passed but the command ran %d times", passed.Load(), l.ran.Load())
	}
	// 12 (command, session) pairs, more than MaxKeys, so evictions hand out
	// fresh buckets; without them 12*5 calls would pass.
	if passed.Load() < 12*5 {
		t.Errorf("%d calls passed, want at least %d", passed.Load(), 12*5)
	}
}

func TestRateLimitInfIsPassThrough(t *testing.T) {
	l := newLimited(t, rate.Inf, 1)
	for i := range 1000 {
		if err := l.agent("c", "s"); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if l.state != nil {
		t.Error("rate.Inf keeps state, want none")
	}
}

// math.Inf(1) is above rate.Inf (the largest float64) and means no limit
// just as well. Given to x/time/rate it is no limit only by accident: two
// calls in one instant turn the bucket's tokens into NaN (0s times +Inf),
// which never counts as full, so the sweep would never free the bucket.
func TestRateLimitPositiveInfinityIsPassThrough(t *testing.T) {
	l := newLimited(t, rate.Limit(math.Inf(1)), 1)
	for i := range 1000 {
		if err := l.agent("c", strconv.Itoa(i%10)); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if l.state != nil {
		t.Errorf("a limit of +Inf keeps %d buckets, want no state", l.state.len())
	}
}

func TestRateLimitPanicsOnUselessConfig(t *testing.T) {
	for _, tt := range []struct {
		limit rate.Limit
		burst int
	}{{0, 1}, {-1, 1}, {1, 0}, {1, -1}, {rate.Limit(math.NaN()), 1}} {
		t.Run(fmt.Sprint(tt.limit, "/", tt.burst), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("RateLimit(%v, %d) did not panic", tt.limit, tt.burst)
				}
			}()
			RateLimit(tt.limit, tt.burst)
		})
	}
}

func TestRateLimitError(t *testing.T) {
	tests := []struct {
		retryAfter time.Duration
		ms         int64
		text       string
	}{
		{250 * time.Millisecond, 250, "rate limit exceeded for c: retry after 250ms"},
		{250*time.Millisecond + 1, 251, "rate limit exceeded for c: retry after 251ms"},
		{2 * time.Second, 2000, "rate limit exceeded for c: retry after 2s"},
		{1, 1, "rate limit exceeded for c: retry after 1ms"},
		{0, 0, "rate limit exceeded for c: retry after 0s"},
		{-time.Second, 0, "rate limit exceeded for c: retry after 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.retryAfter.String(), func(t *testing.T) {
			e := &RateLimitError{Command: "c", RetryAfter: tt.retryAfter}
			if got := e.RetryAfterMs(); got != tt.ms {
				t.Errorf("RetryAfterMs() = %d, want %d", got, tt.ms)
			}
			if got := e.Error(); got != tt.text {
				t.Errorf("Error() = %q, want %q", got, tt.text)
			}
		})
	}
	// Outside the range JSON-RPC reserves for itself.
	if CodeRateLimited >= -32768 && CodeRateLimited <= -32000 {
		t.Errorf("CodeRateLimited = %d is in JSON-RPC's reserved range", CodeRateLimited)
	}
}

func TestRateLimitRetryAfterSaturates(t *testing.T) {
	l := newLimited(t, rate.Limit(1e-12), 1)
	_ = l.agent("c", "s")
	rl := refused(t, l.agent("c", "s"), "c", -1)
	if rl.RetryAfterMs() <= 0 {
		t.Errorf("RetryAfterMs() = %d, want a large positive number", rl.RetryAfterMs())
	}
}

func TestDefaultKey(t *testing.T) {
	withAddr := ContextWithRemoteAddr(context.Background(), "203.0.113.9:4711")
	tests := []struct {
		name string
		ctx  context.Context
		call *Call
		want string
	}{
		{"session ID", context.Background(), &Call{Session: &fakeSession{id: "abc"}}, "session:abc"},
		{"session ID beats address", withAddr, &Call{Session: &fakeSession{id: "abc"}}, "session:abc"},
		{"stateless session", withAddr, &Call{Session: &fakeSession{}}, "addr:203.0.113.9"},
		{"no session", withAddr, &Call{}, "addr:203.0.113.9"},
		{"IPv6", ContextWithRemoteAddr(context.Background(), "[2001:db8::1]:80"), &Call{}, "addr:2001:db8::1"},
		{"address without port", ContextWithRemoteAddr(context.Background(), "pipe"), &Call{}, "addr:pipe"},
		{"nothing", context.Background(), &Call{Session: &fakeSession{}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultKey(tt.ctx, tt.call); got != tt.want {
				t.Errorf("DefaultKey = %q, want %q", got, tt.want)
			}
		})
	}
}
