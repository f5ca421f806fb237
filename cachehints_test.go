package adapter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

type cacheArgs struct {
	ID   int    `json:"id"`
	Lang string `json:"lang,omitempty"`
}

type cacheAllOptional struct {
	Lang string `json:"lang,omitempty"`
}

// cacheServer declares cached_show {id} and cached_list (all optional, so
// with a plain resource) with opts, on a server whose default hints are
// 60 s, public, and an adapter with wrap; the server also has a resource
// of its own, other://thing.
func cacheServer(t *testing.T, wrap []adapter.Option, opts ...adapter.CommandOption) *adapter.Adapter {
	t.Helper()
	srv := server.NewMCPServer("cache-test", "1", server.WithCacheHints(60_000, mcp.CacheScopePublic))
	srv.AddResource(mcp.NewResource("other://thing", "thing"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "other://thing", Text: "{}"}}, nil
	})
	a := adapter.Wrap(srv, wrap...)
	adapter.Live(a, "cached_show", "One thing.", func(_ context.Context, args cacheArgs) (cacheArgs, error) {
		return args, nil
	}, opts...)
	adapter.Live(a, "cached_list", "Things.", func(_ context.Context, args cacheAllOptional) (cacheAllOptional, error) {
		return args, nil
	}, opts...)
	return a
}

// hints reads uri on 2026-07-28 and returns the read's ttlMs (-1 when
// absent) and cacheScope.
func hints(t *testing.T, c *adaptertest.Client, uri string) (int64, mcp.CacheScope) {
	t.Helper()
	res, werr := c.ReadRaw(uri)
	if werr != nil {
		t.Fatalf("read %s: %v", uri, werr)
	}
	ttl, ok := res.TTL()
	if !ok {
		ttl = -1
	}
	return ttl, res.CacheScope
}

// On 2026-07-28 the reads of a command's expanded URIs and of its plain
// resource say its WithCacheTTL; cacheScope is public only with
// WithPublicCache and neither grant nor scope; a command without either
// option keeps the server's default, but for private where a grant or a
// scope applies.
func TestCacheHintsOnModernReads(t *testing.T) {
	grant := adapter.WithGrant(func(context.Context, string) bool { return true })
	scope := adapter.WithScope(func(context.Context) (string, error) { return "tenant", nil })
	cases := []struct {
		name      string
		wrap      []adapter.Option
		opts      []adapter.CommandOption
		wantTTL   int64
		wantScope mcp.CacheScope
	}{
		{"ttl", nil, []adapter.CommandOption{adapter.WithCacheTTL(30 * time.Second)}, 30_000, mcp.CacheScopePrivate},
		{"ttl public", nil, []adapter.CommandOption{adapter.WithCacheTTL(30 * time.Second), adapter.WithPublicCache()}, 30_000, mcp.CacheScopePublic},
		{"public without ttl", nil, []adapter.CommandOption{adapter.WithPublicCache()}, 0, mcp.CacheScopePublic},
		{"ttl 0", nil, []adapter.CommandOption{adapter.WithCacheTTL(0)}, 0, mcp.CacheScopePrivate},
		{"ttl public grant", []adapter.Option{grant}, []adapter.CommandOption{adapter.WithCacheTTL(1500 * time.Millisecond), adapter.WithPublicCache()}, 1500, mcp.CacheScopePrivate},
		{"ttl public scope", []adapter.Option{scope}, []adapter.CommandOption{adapter.WithCacheTTL(time.Minute), adapter.WithPublicCache()}, 60_000, mcp.CacheScopePrivate},
		{"no options", nil, nil, 60_000, mcp.CacheScopePublic},
		{"no options grant", []adapter.Option{grant}, nil, 0, mcp.CacheScopePrivate},
		{"no options scope", []adapter.Option{scope}, nil, 0, mcp.CacheScopePrivate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := cacheServer(t, tc.wrap, tc.opts...)
			c := adaptertest.New(t, a)
			for _, uri := range []string{"app://cached_show/7", "app://cached_show/7?lang=en", "app://cached_list", "app://cached_list?lang=de"} {
				ttl, sc := hints(t, c, uri)
				if ttl != tc.wantTTL || sc != tc.wantScope {
					t.Errorf("read %s: ttlMs %d, cacheScope %q; want %d, %q", uri, ttl, sc, tc.wantTTL, tc.wantScope)
				}
			}
			// The adapter's options shape its own reads only.
			if ttl, sc := hints(t, c, "other://thing"); ttl != 60_000 || sc != mcp.CacheScopePublic {
				t.Errorf("read of the user's own resource: ttlMs %d, cacheScope %q; want the server's 60000, public", ttl, sc)
			}
		})
	}
}

// Reads before 2026-07-28 carry no hints, whatever the options.
func TestCacheHintsNotOnLegacyReads(t *testing.T) {
	a := cacheServer(t, nil, adapter.WithCacheTTL(30*time.Second), adapter.WithPublicCache())
	c := adaptertest.New(t, a, adaptertest.Legacy())
	res, werr := c.ReadRaw("app://cached_show/7")
	if werr != nil {
		t.Fatal(werr)
	}
	if ttl, ok := res.TTL(); ok || res.CacheScope != "" {
		t.Errorf("legacy read: ttlMs %d (%v), cacheScope %q; want neither", ttl, ok, res.CacheScope)
	}
}

// Bad cache and pacing options are declaration errors naming the command
// and what was wrong.
func TestCacheAndPaceOptionErrors(t *testing.T) {
	type listArgs struct {
		IDs []int `json:"ids"`
	}
	cases := []struct {
		name    string
		declare func(a *adapter.Adapter)
		want    string
	}{
		{"negative ttl", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", func(context.Context, cacheArgs) (int, error) { return 0, nil }, adapter.WithCacheTTL(-time.Second))
		}, `command "x": WithCacheTTL(-1s): want a duration of 0 or more in whole milliseconds`},
		{"sub-millisecond ttl", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", func(context.Context, cacheArgs) (int, error) { return 0, nil }, adapter.WithCacheTTL(1500*time.Microsecond))
		}, `WithCacheTTL(1.5ms): want a duration of 0 or more in whole milliseconds`},
		{"negative interval", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", func(context.Context, cacheArgs) (int, error) { return 0, nil }, adapter.WithNotifyInterval(-time.Millisecond))
		}, `command "x": WithNotifyInterval(-1ms): want a duration of 0 (no pacing) or more`},
		{"ttl on a command", func(a *adapter.Adapter) {
			adapter.Command(a, "x", "", func(context.Context, cacheArgs) (int, error) { return 0, nil }, adapter.WithCacheTTL(time.Second))
		}, `command "x": WithCacheTTL on a command without a URI template, which nothing reads or watches: not live`},
		{"public on a list", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", func(context.Context, listArgs) (int, error) { return 0, nil }, adapter.WithPublicCache())
		}, `command "x": WithPublicCache on a command without a URI template, which nothing reads or watches: an argument is a list (ids)`},
		{"interval on a confirmed", func(a *adapter.Adapter) {
			adapter.Live(a, "x", "", func(context.Context, cacheArgs) (int, error) { return 0, nil }, adapter.NeedsConfirmation(), adapter.WithNotifyInterval(time.Second))
		}, `command "x": WithNotifyInterval on a command without a URI template, which nothing reads or watches: needs confirmation`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := adapter.Wrap(server.NewMCPServer("t", "1"))
			defer func() {
				got, _ := recover().(string)
				if !strings.Contains(got, tc.want) {
					t.Errorf("panic %q, want it to say %q", got, tc.want)
				}
			}()
			tc.declare(a)
		})
	}
}
