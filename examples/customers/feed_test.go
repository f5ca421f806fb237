package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// TestWriteReRunsOnlyItsRow: commands.go promises that updating customer
// 12 re-runs the lists and customers_show/12, not customers_show/13. With
// twenty customers_show and a search watched on an instance, a one-row
// UPDATE by plain SQL, and one through a tool on another instance, re-run
// one customers_show each, and the search; an insert re-runs the search,
// which hears it, and no customers_show. On either feed.
func TestWriteReRunsOnlyItsRow(t *testing.T) {
	for _, feed := range []pgfeed.Source{pgfeed.Notify, pgfeed.WAL} {
		t.Run(string(feed), func(t *testing.T) {
			url := pgtest.StartShared(t)
			ctx := t.Context()
			counted := &rerunCounter{runs: map[string][]string{}, ran: make(chan string, 1024)}
			b, err := openPostgresInstance(ctx, url, feed, quietLogger(), adapter.WithMiddleware(counted.count))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			a, err := openPostgresInstance(ctx, url, feed, quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })

			const search = "app://customers_index?search=zed"
			// fence is watched so that the test can tell when b has taken
			// every change before a write to orders: the feeds deliver in
			// commit order.
			const fence = "app://orders_between/2000-01-01/2999-12-31"
			uris := []string{search, fence}
			for id := 1; id <= 20; id++ {
				uris = append(uris, fmt.Sprintf("app://customers_show/%d", id))
			}
			sub, err := adaptertest.New(t, b.a).Listen(uris...)
			if err != nil || len(sub.Acknowledged) != len(uris) {
				t.Fatalf("listen: %+v, %v", sub, err)
			}
			sqlClient, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer sqlClient.Close(context.Background())
			// rerunsOf returns the arguments of every re-run b made for a
			// write, by command, once b has processed it: a write to
			// orders after it is re-run (fence) and b is idle. It checks
			// that b's subscriber was told of uri.
			rerunsOf := func(uri string) map[string][]string {
				t.Helper()
				// A's Publish, which NOTIFY carries, goes in the
				// background; WaitIdle waits for it.
				idle, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := a.a.WaitIdle(idle); err != nil {
					t.Fatal(err)
				}
				if _, err := sqlClient.Exec(ctx, `INSERT INTO orders (customer_id, amount_cents, status, placed_on) VALUES (1, 100, 'open', '2025-01-01')`); err != nil {
					t.Fatal(err)
				}
				timeout := time.After(10 * time.Second)
				for seen := ""; !strings.HasPrefix(seen, "orders_between "); {
					select {
					case seen = <-counted.ran:
					case <-timeout:
						t.Fatal("b did not re-run orders_between within 10s of a write to orders")
					}
				}
				if err := b.a.WaitIdle(idle); err != nil {
					t.Fatal(err)
				}
				if got := sub.Take(); !slices.Contains(got, uri) {
					t.Errorf("b's subscriber was told of %q, want %s among them", got, uri)
				}
				got := counted.take()
				delete(got, "orders_between")
				return got
			}

			if _, err := sqlClient.Exec(ctx, `UPDATE customers SET name = name || ' (edited)' WHERE id = 5`); err != nil {
				t.Fatal(err)
			}
			if got := rerunsOf("app://customers_show/5"); !slices.Equal(got["customers_show"], []string{`{"id":5}`}) || len(got["customers_index"]) == 0 {
				t.Errorf("an UPDATE of customer 5 by SQL re-ran %v; want customers_show 5 alone, and the search", got)
			}

			res, err := adaptertest.New(t, a.a).CallTool("customers_update", map[string]any{"id": 7, "name": "Seventh"})
			if err != nil || res.IsError {
				t.Fatalf("customers_update on a: %+v, %v", res, err)
			}
			if got := rerunsOf("app://customers_show/7"); !slices.Equal(got["customers_show"], []string{`{"id":7}`}) || len(got["customers_index"]) == 0 {
				t.Errorf("customers_update of customer 7 on the other instance re-ran %v; want customers_show 7 alone, and the search", got)
			}

			if _, err := sqlClient.Exec(ctx, `INSERT INTO customers (name, email, created_at) VALUES ('Zed Shaw', 'zed@example.com', now())`); err != nil {
				t.Fatal(err)
			}
			if got := rerunsOf(search); len(got["customers_show"]) != 0 || len(got["customers_index"]) == 0 {
				t.Errorf("an INSERT re-ran %v; want the search alone", got)
			}
		})
	}
}

// rerunCounter records the re-runs of live queries, by command: each
// argument set as canonical JSON. A batched re-run counts each of its
// argument sets. Each is also sent on ran ("command args"), when there is
// room.
type rerunCounter struct {
	mu   sync.Mutex
	runs map[string][]string
	ran  chan string
}

func (c *rerunCounter) count(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, call *middleware.Call) (any, error) {
		if call.Origin == middleware.Live {
			args := []json.RawMessage{call.RawArgs}
			if call.Batch > 0 {
				args = nil
				json.Unmarshal(call.RawArgs, &args)
			}
			c.mu.Lock()
			for _, a := range args {
				c.runs[call.Command] = append(c.runs[call.Command], string(a))
				select {
				case c.ran <- call.Command + " " + string(a):
				default:
				}
			}
			c.mu.Unlock()
		}
		return next(ctx, call)
	}
}

// take returns the distinct argument sets re-run since the last call, and
// empties ran.
func (c *rerunCounter) take() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.ran) > 0 {
		<-c.ran
	}
	out := map[string][]string{}
	for cmd, args := range c.runs {
		slices.Sort(args)
		out[cmd] = slices.Compact(args)
	}
	c.runs = map[string][]string{}
	return out
}

// On PostgreSQL, GET /metrics reports the change feed, and
// /healthz/feed its state, both through a real server.
func TestFeedMetrics(t *testing.T) {
	url := pgtest.StartShared(t)
	inst, err := openInstance(t.Context(), config{postgres: url, feed: "wal"}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, ln, inst, quietLogger()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serveHTTP: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()

	var health pgfeed.Health
	if code := getJSON(t, base+"/healthz/feed", &health); code != http.StatusOK || health.Source != pgfeed.WAL || health.Confirmed == 0 {
		t.Errorf("/healthz/feed: %d %+v", code, health)
	}
	families := scrape(t, base+"/metrics")
	want := map[string]dto.MetricType{
		"mcplive_feed_connected":        dto.MetricType_GAUGE,
		"mcplive_feed_confirmed_lsn":    dto.MetricType_GAUGE,
		"mcplive_feed_lag_bytes":        dto.MetricType_GAUGE,
		"mcplive_feed_lag_seconds":      dto.MetricType_GAUGE,
		"mcplive_feed_reconnects_total": dto.MetricType_COUNTER,
		"mcplive_feed_fallbacks_total":  dto.MetricType_COUNTER,
	}
	var got []string
	for name, f := range families {
		if !strings.HasPrefix(name, "mcplive_feed_") {
			continue
		}
		got = append(got, name)
		if f.GetType() != want[name] {
			t.Errorf("%s is a %v, want a %v", name, f.GetType(), want[name])
		}
		for _, m := range f.GetMetric() {
			if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "source" || l[0].GetValue() != "wal" {
				t.Errorf("%s has labels %v, want source=wal", name, l)
			}
		}
	}
	slices.Sort(got)
	if names := slices.Sorted(maps.Keys(want)); !slices.Equal(got, names) {
		t.Errorf("GET /metrics has the feed metrics %q, want %q", got, names)
	}
	value := func(name string) float64 {
		m := families[name].GetMetric()
		if len(m) != 1 {
			t.Fatalf("%s: %d series", name, len(m))
		}
		if g := m[0].GetGauge(); g != nil {
			return g.GetValue()
		}
		return m[0].GetCounter().GetValue()
	}
	if value("mcplive_feed_connected") != 1 || value("mcplive_feed_confirmed_lsn") != float64(health.Confirmed) && value("mcplive_feed_confirmed_lsn") < float64(health.Confirmed) {
		t.Errorf("connected %v, confirmed %v; health says %+v", value("mcplive_feed_connected"), value("mcplive_feed_confirmed_lsn"), health)
	}
}

// scrape reads the metrics a GET of url serves.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}
