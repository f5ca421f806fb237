package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/draw"
)

// The tenants of these tests: a session's tenant is its ID up to the first
// dash ("a-1" is of tenant a), as an application would read it from the
// session's authenticated user. A session of tenant "x" is refused.

func tenantOf(ctx context.Context) (string, bool) {
	s := server.ClientSessionFromContext(ctx)
	if s == nil {
		return "", false
	}
	tenant, _, _ := strings.Cut(s.SessionID(), "-")
	return tenant, tenant != ""
}

func tenantScope(ctx context.Context) (string, error) {
	tenant, ok := tenantOf(ctx)
	if !ok || tenant == "x" {
		return "", errors.New("no tenant signed in")
	}
	return tenant, nil
}

// tenantStore keeps each tenant's items and counts the runs of its
// command, per tenant, and those that found no tenant in their context.
type tenantStore struct {
	mu      sync.Mutex
	items   map[string]map[int]string // tenant → id → name
	runs    map[string]int
	blind   atomic.Int64 // runs without a tenant
	revoked map[string]bool
}

func newTenantStore() *tenantStore {
	return &tenantStore{items: map[string]map[int]string{}, runs: map[string]int{}, revoked: map[string]bool{}}
}

func (s *tenantStore) set(tenant string, id int, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items[tenant] == nil {
		s.items[tenant] = map[int]string{}
	}
	s.items[tenant][id] = name
}

func (s *tenantStore) runsOf(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[tenant]
}

func (s *tenantStore) revoke(tenant string, revoked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[tenant] = revoked
}

// newTenantServer serves tenant_show {id}: the item of the caller's
// tenant, read (table-wide) as "items", so that a write of any tenant's
// item re-runs every tenant's query and only the results tell them apart.
// The grant refuses revoked tenants.
func newTenantServer(t *testing.T, st *tenantStore, opts ...Option) *Adapter {
	t.Helper()
	opts = append([]Option{WithScope(tenantScope), WithGrant(func(ctx context.Context, _ string) bool {
		tenant, _ := tenantOf(ctx)
		st.mu.Lock()
		defer st.mu.Unlock()
		return !st.revoked[tenant]
	})}, opts...)
	a := Wrap(server.NewMCPServer("scope-test", "1"), opts...)
	Live(a, "tenant_show", "One item of the caller's tenant.", func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, "items")
		tenant, ok := tenantOf(ctx)
		if !ok {
			st.blind.Add(1)
			return item{}, errors.New("no tenant")
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		st.runs[tenant]++
		name, ok := st.items[tenant][args.ID]
		if !ok {
			return item{}, ErrNotFound
		}
		return item{ID: args.ID, Name: name}, nil
	})
	t.Cleanup(func() {
		if n := st.blind.Load(); n != 0 {
			t.Errorf("the command ran %d times without its tenant in its context", n)
		}
	})
	return a
}

// scopeEra subscribes a client to uri on one protocol version.
type scopeEra struct {
	name      string
	subscribe func(t *testing.T, f *fakeClient, uri string) (refused bool)
}

var scopeEras = []scopeEra{
	{"legacy", func(t *testing.T, f *fakeClient, uri string) bool {
		return f.subscribe(uri) != nil
	}},
	{"modern", func(t *testing.T, f *fakeClient, uri string) bool {
		acked, _ := f.listen(t, uri)
		return !slices.Contains(acked, uri)
	}},
}

// Two tenants on one URI make two queries; two clients of one tenant share
// one; a write to one tenant's data notifies that tenant's clients and no
// one else's; every run, first and re-run, sees its tenant.
func TestScopeSeparatesTenants(t *testing.T) {
	for _, era := range scopeEras {
		t.Run(era.name, func(t *testing.T) {
			st := newTenantStore()
			st.set("a", 1, "apple")
			st.set("b", 1, "banana")
			a := newTenantServer(t, st)
			const uri = "app://tenant_show/1"
			a1, a2, b1 := newFakeClient(t, a, "a-1", 16), newFakeClient(t, a, "a-2", 16), newFakeClient(t, a, "b-1", 16)
			for _, f := range []*fakeClient{a1, a2, b1} {
				if era.subscribe(t, f, uri) {
					t.Fatalf("%s: subscription refused", f.s.id)
				}
			}
			qs := a.LiveQueries()
			if len(qs) != 2 || qs[0].Scope == "" || qs[1].Scope == "" || qs[0].Scope == qs[1].Scope {
				t.Fatalf("LiveQueries = %+v; want two queries with two scope tags", qs)
			}
			for _, q := range qs {
				if q.Scope == "a" || q.Scope == "b" || strings.Contains(string(q.Arguments), "banana") {
					t.Fatalf("LiveQueries says the scope itself: %+v", q)
				}
			}
			if subs := []int{qs[0].Subscribers, qs[1].Subscribers}; !slices.Contains(subs, 2) || !slices.Contains(subs, 1) {
				t.Fatalf("subscribers per query %v; want tenant a's two clients on one query", subs)
			}

			st.set("b", 1, "blueberry")
			a.Changed("items")
			waitIdle(t, a)
			if got := b1.take(); !slices.Equal(got, []string{uri}) {
				t.Errorf("b's client heard %q after b's write, want %q", got, uri)
			}
			if got := append(a1.take(), a2.take()...); len(got) != 0 {
				t.Errorf("a's clients heard %q after b's write: a cross-tenant signal", got)
			}

			st.set("a", 1, "apricot")
			a.Changed("items")
			waitIdle(t, a)
			if got := append(a1.take(), a2.take()...); !slices.Equal(got, []string{uri, uri}) {
				t.Errorf("a's clients heard %q after a's write, want the URI twice", got)
			}
			if got := b1.take(); len(got) != 0 {
				t.Errorf("b's client heard %q after a's write", got)
			}
			if st.runsOf("a") < 3 || st.runsOf("b") < 2 {
				t.Errorf("runs per tenant a %d, b %d; want the first runs and both re-runs of each", st.runsOf("a"), st.runsOf("b"))
			}
		})
	}
}

// A caller the scope function refuses gets an error naming why, and no
// subscription; the command does not run for it.
func TestScopeRefusedCaller(t *testing.T) {
	st := newTenantStore()
	st.set("x", 1, "xylophone")
	a := newTenantServer(t, st)
	f := newFakeClient(t, a, "x-1", 16)
	const uri = "app://tenant_show/1"
	const why = "the request has no scope: no tenant signed in"
	for name, e := range map[string]*mcp.JSONRPCErrorDetails{
		"read":      f.call("resources/read", map[string]any{"uri": uri}),
		"tools":     f.call("tools/call", map[string]any{"name": "tenant_show", "arguments": map[string]any{"id": 1}}),
		"subscribe": f.subscribe(uri),
	} {
		if e == nil || e.Code != mcp.INVALID_REQUEST || e.Message != why {
			t.Errorf("%s: error %+v, want -32600 %q", name, e, why)
		}
	}
	f.nextID++
	modern := withHTTPEdge(f.ctx())
	if e := handleCall(a, modern, f.nextID, "subscriptions/listen", json.RawMessage(listenParams(uri))); e == nil || e.Message != why {
		t.Errorf("listen: error %+v, want -32600 %q", e, why)
	}
	if qs := a.LiveQueries(); len(qs) != 0 {
		t.Errorf("queries after refused subscriptions: %+v", qs)
	}
	if n := st.runsOf("x"); n != 0 {
		t.Errorf("the command ran %d times for a refused caller", n)
	}
}

// listenParams are the params of a 2026-07-28 subscriptions/listen of uris.
func listenParams(uris ...string) []byte {
	var msg struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(listenRequest(1, uris), &msg)
	return msg.Params
}

// A grant withdrawn after subscribing is asked before the next re-run: the
// command does not run, the subscriber hears once (a read now fails), and
// nothing more until the grant is given back.
func TestScopeGrantWithdrawnStopsReruns(t *testing.T) {
	for _, era := range scopeEras {
		t.Run(era.name, func(t *testing.T) {
			st := newTenantStore()
			st.set("a", 1, "apple")
			a := newTenantServer(t, st)
			const uri = "app://tenant_show/1"
			f := newFakeClient(t, a, "a-1", 16)
			if era.subscribe(t, f, uri) {
				t.Fatal("subscription refused")
			}
			runs := st.runsOf("a")
			st.revoke("a", true)
			for i, want := range [][]string{{uri}, nil, nil} {
				st.set("a", 1, fmt.Sprintf("apple %d", i))
				a.Changed("items")
				waitIdle(t, a)
				if got := f.take(); !slices.Equal(got, want) {
					t.Errorf("write %d after the grant was withdrawn: heard %q, want %q", i, got, want)
				}
			}
			if n := st.runsOf("a"); n != runs {
				t.Errorf("the command ran %d times after the grant was withdrawn", n-runs)
			}
			if e := f.call("resources/read", map[string]any{"uri": uri}); e == nil || e.Code != mcp.RESOURCE_NOT_FOUND {
				t.Errorf("read after the grant was withdrawn: %+v, want resource-not-found", e)
			}
			st.revoke("a", false)
			st.set("a", 1, "apple again")
			a.Changed("items")
			waitIdle(t, a)
			if got := f.take(); !slices.Equal(got, []string{uri}) || st.runsOf("a") != runs+1 {
				t.Errorf("grant given back: heard %q, runs %d; want the URI once and one more run", got, st.runsOf("a")-runs)
			}
		})
	}
}

// On 2026-07-28 a read of a scoped or granted command says cacheScope
// private, even where the server's default is public.
func TestScopeReadsArePrivate(t *testing.T) {
	st := newTenantStore()
	st.set("a", 1, "apple")
	srv := server.NewMCPServer("scope-test", "1", server.WithCacheHints(60_000, mcp.CacheScopePublic))
	a := Wrap(srv, WithScope(tenantScope))
	Live(a, "tenant_show", "One item.", func(ctx context.Context, args itemArgs) (item, error) {
		return item{ID: args.ID}, nil
	})
	f := newFakeClient(t, a, "a-1", 16)
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": map[string]any{
		"uri": "app://tenant_show/1",
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "fake", "version": "1"},
		},
	}})
	b, _ := json.Marshal(a.HandleMessage(f.ctx(), raw))
	if !strings.Contains(string(b), `"cacheScope":"private"`) {
		t.Errorf("modern read of a scoped command: %s; want cacheScope private", b)
	}
}

// Random subscribes, unsubscribes and writes across tenants: after every
// write, each client that watches the written item in the written tenant
// hears it (no lost wake-up), and no client of another tenant, or of
// another item, hears anything.
func TestScopeProperty(t *testing.T) {
	draw.ForEachSeed(t, checks, checkScopeProperty)
}

func checkScopeProperty(t *testing.T, c *draw.Choices) {
	st := newTenantStore()
	tenants := []string{"a", "b", "c"}
	for _, tn := range tenants {
		for id := 1; id <= 3; id++ {
			st.set(tn, id, tn)
		}
	}
	a := newTenantServer(t, st)
	type clientState struct {
		f      *fakeClient
		tenant string
		subs   map[int]bool
	}
	var clients []*clientState
	for i := range 5 {
		tn := draw.Pick(c, tenants)
		clients = append(clients, &clientState{f: newFakeClient(t, a, fmt.Sprintf("%s-%d", tn, i), 64), tenant: tn, subs: map[int]bool{}})
	}
	uriOf := func(id int) string { return fmt.Sprintf("app://tenant_show/%d", id) }
	for step := 0; step < 30; step++ {
		cl := draw.Pick(c, clients)
		id := c.IntRange(1, 3)
		switch c.Intn(3) {
		case 0:
			if cl.f.subscribe(uriOf(id)) != nil {
				t.Fatalf("step %d: subscribe refused", step)
			}
			cl.subs[id] = true
		case 1:
			if cl.f.unsubscribe(uriOf(id)) != nil {
				t.Fatalf("step %d: unsubscribe refused", step)
			}
			delete(cl.subs, id)
		default:
			tn := draw.Pick(c, tenants)
			st.set(tn, id, fmt.Sprintf("%s %d", tn, step))
			a.Changed("items")
			waitIdle(t, a)
			for _, other := range clients {
				got := other.f.take()
				var want []string
				if other.tenant == tn && other.subs[id] {
					want = []string{uriOf(id)}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: write of %s/%d: client %s (watching %v) heard %q, want %q",
						step, tn, id, other.f.s.id, other.subs, got, want)
				}
			}
		}
	}
}

// A command with a batch form re-runs the queries of one scope together,
// never two tenants' in one call: the call carries one request's values.
func TestScopeBatchesKeepToOneTenant(t *testing.T) {
	st := newTenantStore()
	var widest, calls atomic.Int64
	a := Wrap(server.NewMCPServer("scope-test", "1"), WithScope(tenantScope))
	show := func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, "items")
		return item{ID: args.ID}, nil
	}
	Live(a, "tenant_show", "One item.", show, WithBatch(func(ctx context.Context, args []itemArgs) ([]item, error) {
		calls.Add(1)
		for n := int64(len(args)); ; {
			if w := widest.Load(); n <= w || widest.CompareAndSwap(w, n) {
				break
			}
		}
		tenant, _ := tenantOf(ctx)
		out := make([]item, len(args))
		for i, x := range args {
			st.mu.Lock()
			out[i] = item{ID: x.ID, Name: st.items[tenant][x.ID]}
			st.mu.Unlock()
		}
		return out, nil
	}))
	var clients []*fakeClient
	for _, tn := range []string{"a", "b"} {
		f := newFakeClient(t, a, tn+"-1", 64)
		for id := 1; id <= 8; id++ {
			st.set(tn, id, tn)
			if f.subscribe(fmt.Sprintf("app://tenant_show/%d", id)) != nil {
				t.Fatal("subscribe refused")
			}
		}
		clients = append(clients, f)
	}
	for _, tn := range []string{"a", "b"} {
		for id := 1; id <= 8; id++ {
			st.set(tn, id, tn+" changed")
		}
	}
	a.Changed("items")
	waitIdle(t, a)
	// Each tenant has 8 queries: a call of more mixes tenants.
	if calls.Load() < 2 || widest.Load() > 8 {
		t.Errorf("%d batched calls, the widest of %d argument sets; want a call per tenant at least, none of more than one tenant's 8", calls.Load(), widest.Load())
	}
	for _, f := range clients {
		if got := f.take(); len(got) != 8 {
			t.Errorf("%s heard %d notifications, want 8", f.s.id, len(got))
		}
	}
}

// In a batch, the grant is asked for each query with the values of the
// request that made it, as for a query re-run alone: two clients of one
// tenant whose grants differ (the grant tells sessions apart, the scope
// only tenants) each get their own answer, whichever query comes first in
// the batch. The one whose grant was withdrawn runs no more; the other
// hears every change.
func TestScopeBatchAsksEachQuerysGrant(t *testing.T) {
	st := newTenantStore()
	var revoked sync.Map // session IDs
	var ranFor sync.Map  // item IDs run after the revocation, by either form
	var after atomic.Bool
	a := Wrap(server.NewMCPServer("scope-test", "1"), WithScope(tenantScope), WithGrant(func(ctx context.Context, _ string) bool {
		_, no := revoked.Load(server.ClientSessionFromContext(ctx).SessionID())
		return !no
	}))
	show := func(ctx context.Context, args itemArgs) (item, error) {
		Reads(ctx, "items")
		if after.Load() {
			ranFor.Store(args.ID, true)
		}
		tenant, _ := tenantOf(ctx)
		st.mu.Lock()
		defer st.mu.Unlock()
		return item{ID: args.ID, Name: st.items[tenant][args.ID]}, nil
	}
	Live(a, "tenant_show", "One item.", show, WithBatch(func(ctx context.Context, args []itemArgs) ([]item, error) {
		out := make([]item, len(args))
		for i, x := range args {
			out[i], _ = show(ctx, x)
		}
		return out, nil
	}))
	st.set("a", 1, "apple")
	st.set("a", 2, "apricot")
	// a-2's query is made first, and leads the batch.
	revokedClient, granted := newFakeClient(t, a, "a-2", 16), newFakeClient(t, a, "a-1", 16)
	if revokedClient.subscribe("app://tenant_show/2") != nil || granted.subscribe("app://tenant_show/1") != nil {
		t.Fatal("subscribe refused")
	}
	revoked.Store("a-2", true)
	after.Store(true)
	for i := range 3 {
		st.set("a", 1, fmt.Sprint("apple ", i))
		st.set("a", 2, fmt.Sprint("apricot ", i))
		a.Changed("items")
		waitIdle(t, a)
		if got := granted.take(); !slices.Equal(got, []string{"app://tenant_show/1"}) {
			t.Errorf("write %d: the client still granted heard %q, want its URI", i, got)
		}
	}
	if _, ran := ranFor.Load(2); ran {
		t.Error("the command ran for the argument set of the session whose grant was withdrawn")
	}
	if got := revokedClient.take(); !slices.Equal(got, []string{"app://tenant_show/2"}) {
		t.Errorf("the client whose grant was withdrawn heard %q, want its URI once", got)
	}
}

type requestMark struct{}

// What a re-run's context carries, as docs/watching.md says it: without a
// scope, no value of the request that subscribed (one run serves every
// subscriber, whoever asked); with WithScope, the values of the request
// that made the query, without its cancellation.
func TestRerunCarriesRequestValuesOnlyWithAScope(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want any
	}{
		{"without a scope", nil, nil},
		{"with a scope", []Option{WithScope(func(ctx context.Context) (string, error) { return "s", nil })}, "ada's request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newLiveServer(t, newItemStore(4), tc.opts...)
			seen := make(chan any, 8)
			Live(a, "mark_show", "What the run's context carries.", func(ctx context.Context, _ struct{}) (int, error) {
				Reads(ctx, "marks")
				seen <- ctx.Value(requestMark{})
				return len(seen), nil
			})
			f := newFakeClient(t, a, "s1", 16)
			defer f.close()
			acked, _, stop := f.listenIn(func(ctx context.Context, _ int, _ context.CancelFunc) context.Context {
				return context.WithValue(ctx, requestMark{}, "ada's request")
			}, "app://mark_show")
			if len(acked) != 1 {
				t.Fatalf("acknowledged %q", acked)
			}
			if first := <-seen; first != "ada's request" {
				t.Fatalf("the first run, in the request, saw %v", first)
			}
			a.Changed("marks")
			waitIdle(t, a)
			if rerun := <-seen; rerun != tc.want {
				t.Errorf("the re-run saw %v, want %v", rerun, tc.want)
			}
			stop()
		})
	}
}
