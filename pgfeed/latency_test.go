package pgfeed_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// BenchmarkWriteToNotification measures, end to end on loopback, how long a
// write takes to reach an agent subscribed on another instance: from the
// moment the write's commit returns to the moment an MCP client connected to
// instance B over Streamable HTTP (protocol 2026-07-28, subscriptions/listen)
// receives notifications/resources/updated. It reports the median and the
// 99th percentile; docs/many-instances.md has the numbers. Over 1,000 writes:
//
//	go test -run '^$' -bench WriteToNotification -benchtime 1000x ./pgfeed/
//
// publish: instance A writes and calls Changed, which publishes the row's
// key; no triggers. B hears A's notification, re-runs the query, notifies.
//
// trigger: a plain SQL client writes; the trigger's notification reaches B.
//
// both: triggers installed and A writes and publishes, the setup of the
// example application with -feed notify: B hears the trigger's
// notification first (it is sent at the commit) and A's afterwards; the
// first one notifies the client.
//
// wal-sql: a plain SQL client writes; B's WAL feed reads it in the log.
//
// wal-app: A writes and calls Changed, the example with -feed wal: A's
// Publish sends nothing, B's WAL feed reads the write in the log.
//
// Every commit waits for its flush (synchronous_commit on, as PostgreSQL
// ships; the test server's default is off): a WAL feed reads only what is
// flushed.
//
// Each write changes the watched row, one at a time: the next write waits
// until B has heard everything about the previous one and is idle, outside
// the measured time.
func BenchmarkWriteToNotification(b *testing.B) {
	for _, path := range []struct {
		name     string
		triggers bool
		throughA bool
		wal      bool
	}{
		{"publish", false, true, false},
		{"trigger", true, false, false},
		{"both", true, true, false},
		{"wal-sql", false, false, true},
		{"wal-app", false, true, true},
	} {
		b.Run(path.name, func(b *testing.B) {
			url := pgtest.StartShared(b)
			sql := connect(b, url)
			exec(b, sql, `SET synchronous_commit = on`)
			createItems(b, sql, 1, path.triggers)
			var opts []pgfeed.Option
			if path.wal {
				opts = itemsWAL
			}
			instA, instB := startInstance(b, url, "a", opts...), startInstance(b, url, "b", opts...)
			exec(b, instA.db.conn, `SET synchronous_commit = on`)
			notes := dialHTTP(b, instB, oneURI)
			ctx := context.Background()

			// What B hears of one write: A's publication, the trigger's
			// notification, both, or the write in the log.
			var expect []heard
			if path.triggers {
				expect = append(expect, changed("items/1"))
			}
			if path.throughA && !path.wal {
				expect = append(expect, changed("items/1"))
			}
			if path.wal {
				expect = append(expect, changed("items/1"))
			}

			lat := make([]time.Duration, 0, b.N)
			seq := 0
			for b.Loop() {
				seq++
				name := fmt.Sprintf("v%d", seq)
				if path.throughA {
					// What a command does: write, then Changed.
					instA.db.mu.Lock()
					_, err := instA.db.conn.Exec(ctx, `UPDATE items SET name = $1 WHERE id = 1`, name)
					instA.db.mu.Unlock()
					if err != nil {
						b.Fatal(err)
					}
				} else {
					exec(b, sql, `UPDATE items SET name = $1 WHERE id = 1`, name)
				}
				start := time.Now()
				if path.throughA {
					instA.a.Changed("items/1")
				}
				select {
				case uri := <-notes:
					lat = append(lat, time.Since(start))
					if uri != oneURI {
						b.Fatalf("notified of %s, want %s", uri, oneURI)
					}
				case <-time.After(wait):
					b.Fatalf("write %d: no notification within %v", seq, wait)
				}

				// Let B finish with this write before the next one.
				for _, want := range expect {
					if h := instB.next(b); fmt.Sprint(h) != fmt.Sprint(want) {
						b.Fatalf("b heard %v, want %v", h, want)
					}
				}
				idle, cancel := context.WithTimeout(ctx, wait)
				err := instB.a.WaitIdle(idle)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
			select {
			case uri := <-notes:
				b.Fatalf("one notification too many: %s", uri)
			default:
			}
			slices.Sort(lat)
			ms := func(q float64) float64 {
				return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond)
			}
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}

// dialHTTP serves in over Streamable HTTP on loopback, connects an MCP client
// to it, subscribes to uri and returns the channel of the client's
// notifications/resources/updated.
func dialHTTP(t testing.TB, in *instance, uri string) <-chan string {
	t.Helper()
	hs := httptest.NewServer(in.a.HTTPHandler(server.NewStreamableHTTPServer(in.a.Server())))
	t.Cleanup(hs.Close)
	tr, err := transport.NewStreamableHTTP(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	notes := make(chan string, 16)
	acked := make(chan []string, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationResourceUpdated:
			u, _ := n.Params.AdditionalFields["uri"].(string)
			notes <- u
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			acked <- nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "latency", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	listenErr := make(chan error, 1)
	stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}},
		func(err error) { listenErr <- err })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	select {
	case <-acked:
	case err := <-listenErr:
		t.Fatalf("listen: %v", err)
	case <-ctx.Done():
		t.Fatal("listen: no acknowledgement")
	}
	return notes
}
