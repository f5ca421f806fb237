package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// The PostgreSQL tests share one throwaway server (pgfeed/pgtest), each in
// a database of its own. Without PostgreSQL installed they skip, unless
// MCPLIVE_REQUIRE_POSTGRES=1.
func TestMain(m *testing.M) {
	os.Exit(pgtest.WithShared(m).Run())
}

func TestPostgresFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"-postgres", "postgres://localhost/shop"}, io.Discard)
	if err != nil || cfg.postgres != "postgres://localhost/shop" || cfg.dbPath != "" || cfg.feed != "notify" {
		t.Errorf("-postgres: %+v, %v", cfg, err)
	}
	if cfg, err := parseFlags([]string{"-postgres", "postgres://localhost/shop", "-feed", "wal"}, io.Discard); err != nil || cfg.feed != "wal" {
		t.Errorf("-feed wal: %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"-db", "shop.db", "-postgres", "postgres://localhost/shop"},
		{"-postgres", "postgres://localhost/shop", "-feed", "kafka"},
		{"-feed", "wal"}, // no -postgres: nothing to feed
		{"-feed", "notify"},
	} {
		var said strings.Builder
		if _, err := parseFlags(args, &said); err == nil || !strings.Contains(said.String(), "-") {
			t.Errorf("%q: %v, said %q; want an error naming the flag", args, err, said.String())
		}
	}
}

func TestRebind(t *testing.T) {
	for query, want := range map[string]string{
		`SELECT 1`:                          `SELECT 1`,
		`WHERE a = ? AND b = ?`:             `WHERE a = $1 AND b = $2`,
		`WHERE ?1 = '' OR x = ?1 LIMIT ?12`: `WHERE $1 = '' OR x = $1 LIMIT $12`,
		`IN (SELECT value FROM f(?::json))`: `IN (SELECT value FROM f($1::json))`,
	} {
		if got := postgresDialect.rebind(query); got != want {
			t.Errorf("rebind(%q) = %q, want %q", query, got, want)
		}
		if got := sqliteDialect.rebind(query); got != query {
			t.Errorf("SQLite: rebind(%q) = %q, want it unchanged", query, got)
		}
	}
}

// TestPostgresMatchesSQLite runs the same reads and writes on a SQLite store
// and on a PostgreSQL one, from their seeds on: every answer must be the
// same, errors included.
func TestPostgresMatchesSQLite(t *testing.T) {
	ctx := t.Context()
	lite := newTestStore(t)
	pg, err := openPostgres(ctx, pgtest.StartShared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })

	same := func(what string, f func(st *store) (any, error)) {
		t.Helper()
		want, wantErr := f(lite)
		got, gotErr := f(pg)
		if !reflect.DeepEqual(got, want) || errorClass(gotErr) != errorClass(wantErr) {
			t.Errorf("%s:\nPostgreSQL %+v, %v\nSQLite     %+v, %v", what, got, gotErr, want, wantErr)
		}
	}
	everything := func(what string) {
		t.Helper()
		same(what+": customers", func(st *store) (any, error) { return st.allCustomers(ctx) })
		same(what+": orders", func(st *store) (any, error) { return st.ordersBetween(ctx, "2000-01-01", "2999-12-31", "") })
	}

	everything("seed")
	same("by ids", func(st *store) (any, error) { return st.customersByIDs(ctx, []int64{3, 1, 999, 3}) })
	same("orders of June", func(st *store) (any, error) { return st.ordersBetween(ctx, "2023-06-01", "2023-06-30", "open") })

	when := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	same("create", func(st *store) (any, error) { return st.createCustomer(ctx, "Hypatia", "hypatia@example.com", when) })
	// Names whose case sorts them differently with and without folding,
	// beyond ASCII too.
	for _, name := range []string{"ada byron", "ZED", "alan kay jr", "Ben_Bitdiddle", "Åke Ärlig", "åsa", "ÉMILE", "Wolfgang Strauß", "Σωκράτης"} {
		same("create "+name, func(st *store) (any, error) {
			return st.createCustomer(ctx, name, seedEmail(name), when)
		})
	}
	name, taken := "Hypatia of Alexandria", "grace.hopper@example.com"
	same("update", func(st *store) (any, error) { return st.updateCustomer(ctx, 61, &name, nil) })
	same("update, unknown", func(st *store) (any, error) { return st.updateCustomer(ctx, 9999, &name, nil) })
	same("update, email taken", func(st *store) (any, error) { return st.updateCustomer(ctx, 61, nil, &taken) })
	order := Order{CustomerID: 61, AmountCents: 1234, Status: "open", PlacedOn: "2025-03-02"}
	same("order", func(st *store) (any, error) { return st.createOrder(ctx, order) })

	// The failures come last: PostgreSQL spends an id on a failed insert
	// (sequences do not roll back), SQLite does not, so the ids of later
	// rows would differ.
	same("create, email taken", func(st *store) (any, error) {
		return st.createCustomer(ctx, "Ada again", "ADA.lovelace@example.com", when)
	})
	order.CustomerID = 9999
	same("order, unknown customer", func(st *store) (any, error) { return st.createOrder(ctx, order) })
	everything("after the writes")

	// Searches, sorts and pages, over the seed and the new rows.
	for _, search := range []string{"", "ada", "an", "%", "_", "o'", ".LOVELACE@", "ÅKE", "Å", "strauss", "Σ", "ö"} {
		for _, sortBy := range []string{"name", "created_at"} {
			for _, desc := range []bool{false, true} {
				for _, off := range []int{0, 14, 56} {
					p := customerPage{Search: search, SortBy: sortBy, Desc: desc, Limit: 7, Offset: off}
					same(fmt.Sprintf("%+v", p), func(st *store) (any, error) {
						page, total, err := st.listCustomers(ctx, p)
						return []any{page, total}, err
					})
				}
			}
		}
	}
}

// The batch forms answer as the commands do on PostgreSQL too, whose
// VALUES list needs its types.
func TestPostgresBatchFormsMatch(t *testing.T) {
	st, err := openPostgres(t.Context(), pgtest.StartShared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	checkBatchFormsMatch(t, &shop{st: st})
}

// Instances that start together on an empty database seed it once.
func TestPostgresInstancesStartTogether(t *testing.T) {
	url := pgtest.StartShared(t)
	const instances = 4
	errs := make(chan error, instances)
	for range instances {
		go func() {
			st, err := openPostgres(t.Context(), url)
			if err == nil {
				err = st.Close()
			}
			errs <- err
		}()
	}
	for range instances {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	st, err := openPostgres(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if all, err := st.allCustomers(t.Context()); err != nil || len(all) != len(seedNames()) {
		t.Errorf("%d customers, %v; want the seed's %d", len(all), err, len(seedNames()))
	}
}

// errorClass names what a caller can tell about err.
func errorClass(err error) string {
	for _, known := range []error{errEmailTaken, errNoCustomer, sql.ErrNoRows} {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return "none"
}

// TestPostgresTwoInstances runs two instances of the example on one
// PostgreSQL database, as -postgres does, with each feed: instance 1 with
// run itself on stdio, instance 2 with the same openInstance and serveHTTP
// on a loopback port. An agent subscribed on instance 2 hears about a
// customer created through the tool on instance 1, and about a write made
// with plain SQL.
func TestPostgresTwoInstances(t *testing.T) {
	for _, feed := range []string{"notify", "wal"} {
		t.Run(feed, func(t *testing.T) { testTwoInstances(t, feed) })
	}
}

func testTwoInstances(t *testing.T, feed string) {
	url := pgtest.StartShared(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	// Instance 2, over HTTP. It creates and seeds the database.
	two, err := openInstance(ctx, config{postgres: url, feed: feed}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, ln, two, quietLogger()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serveHTTP: %v", err)
		}
		two.Close()
	})
	base := "http://" + ln.Addr().String()
	var health pgfeed.Health
	if code := getJSON(t, base+"/healthz/feed", &health); code != http.StatusOK || !health.Connected || string(health.Source) != feed {
		t.Errorf("/healthz/feed: %d %+v, want 200, connected, source %s", code, health, feed)
	}

	// An agent on instance 2 reads an expanded URI and subscribes to it.
	agent, notes := dialModern(t, base+"/mcp")
	const uri = "app://customers_index?search=zed"
	if body, err := readResource(t, agent, uri); err != nil || !strings.Contains(body, `"total":0`) {
		t.Fatalf("read %s: %s, %v", uri, body, err)
	}
	listen(t, agent, uri)

	// Instance 1, run as main runs it, on stdio: an agent creates Zed.
	one := startStdio(t, config{postgres: url, feed: feed, stdio: true})
	one.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`)
	one.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	one.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"customers_create","arguments":{"name":"Zed Shaw","email":"zed@example.com"}}}`)
	if res := one.result(t, 2); !strings.Contains(res, "Zed Shaw") || strings.Contains(res, `"isError":true`) {
		t.Fatalf("customers_create on instance 1: %s", res)
	}

	next := func(what string) {
		t.Helper()
		select {
		case got := <-notes:
			if got != uri {
				t.Fatalf("%s: notified of %s, want %s", what, got, uri)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notification on instance 2 within 10s", what)
		}
	}
	next("customer created through instance 1")
	if body, _ := readResource(t, agent, uri); !strings.Contains(body, "Zed Shaw") {
		t.Errorf("instance 2 reads %s", body)
	}

	// psql, or any other client of the database: the triggers, or the
	// log, report it.
	sqlClient, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlClient.Close(context.Background())
	if _, err := sqlClient.Exec(ctx, `UPDATE customers SET name = 'Zed A. Shaw' WHERE email = 'zed@example.com'`); err != nil {
		t.Fatal(err)
	}
	next("update by plain SQL")
	if body, _ := readResource(t, agent, uri); !strings.Contains(body, "Zed A. Shaw") {
		t.Errorf("instance 2 reads %s", body)
	}

	one.stop(t)
	if code := getJSON(t, base+"/healthz/feed", &health); code != http.StatusOK || health.Received == 0 ||
		feed == "wal" && (health.Confirmed == 0 || health.Slot == "" || health.Fallbacks != 0) {
		t.Errorf("/healthz/feed: %d %+v", code, health)
	}
	if feed == "wal" {
		// Instance 1 stopped cleanly: its slot is gone, instance 2's is
		// in use.
		var slots []string
		rows, err := sqlClient.Query(ctx, `SELECT slot_name || ':' || active FROM pg_replication_slots WHERE database = current_database()`)
		if err == nil {
			slots, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil || !reflect.DeepEqual(slots, []string{health.Slot + ":true"}) {
			t.Errorf("replication slots %q, %v; want %s in use, alone", slots, err, health.Slot)
		}
	}
}

// getJSON decodes the JSON body of GET url into v and returns the status.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

// dialModern connects an MCP client over Streamable HTTP on the newest
// protocol, and returns it with the URIs of the notifications/resources/updated
// it receives.
func dialModern(t *testing.T, url string) (*client.Client, <-chan string) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	notes := make(chan string, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			notes <- uri
		}
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "customers-test", Version: "0"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c, notes
}

// listen subscribes c to uris with subscriptions/listen and waits for the
// acknowledgement.
func listen(t *testing.T, c *client.Client, uris ...string) {
	t.Helper()
	acked := make(chan []string, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationSubscriptionsAcknowledged) {
			var f mcp.SubscriptionFilter
			b, _ := json.Marshal(n.Params.AdditionalFields["notifications"])
			_ = json.Unmarshal(b, &f)
			acked <- f.ResourceSubscriptions
		}
	})
	failed := make(chan error, 1)
	stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: uris},
		func(err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	select {
	case got := <-acked:
		if !reflect.DeepEqual(got, uris) {
			t.Fatalf("acknowledged %q, want %q", got, uris)
		}
	case err := <-failed:
		t.Fatalf("listen: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("listen: no acknowledgement within 10s")
	}
}

// stdioInstance is run serving stdio on pipes.
type stdioInstance struct {
	in   io.WriteCloser
	raw  io.Reader // stdout
	out  *json.Decoder
	done chan error
}

func startStdio(t *testing.T, cfg config) *stdioInstance {
	t.Helper()
	stdin, toServer := io.Pipe()
	fromServer, stdout := io.Pipe()
	s := &stdioInstance{in: toServer, raw: fromServer, out: json.NewDecoder(fromServer), done: make(chan error, 1)}
	go func() {
		s.done <- run(t.Context(), cfg, stdin, stdout, quietLogger())
		stdout.Close()
	}()
	t.Cleanup(func() { toServer.Close() })
	return s
}

func (s *stdioInstance) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(s.in, msg+"\n"); err != nil {
		t.Fatal(err)
	}
}

// result returns the result of the response with the given id, skipping
// the other messages.
func (s *stdioInstance) result(t *testing.T, id int) string {
	t.Helper()
	for {
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := s.out.Decode(&msg); err != nil {
			t.Fatalf("stdout is not a stream of JSON-RPC messages: %v", err)
		}
		if msg.ID != nil && *msg.ID == id {
			if msg.Error != nil {
				t.Fatalf("request %d failed: %s", id, msg.Error)
			}
			return string(msg.Result)
		}
	}
}

// stop closes stdin, as a client that is done does, and waits for run to
// return.
func (s *stdioInstance) stop(t *testing.T) {
	t.Helper()
	s.in.Close()
	go io.Copy(io.Discard, s.raw) // let the server finish writing
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after stdin closed")
	}
}

// TestPostgresCapsConnections starts three times as many read
// transactions at once as the store may open connections, and checks that
// PostgreSQL serves the store no more than that: the others wait for one.
func TestPostgresCapsConnections(t *testing.T) {
	ctx := t.Context()
	url := pgtest.StartShared(t)
	st, err := openPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	watcher, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(context.Background())

	conns := postgresConns()
	if got := st.db.Stats().MaxOpenConnections; got != conns {
		t.Fatalf("the store may open %d connections, want %d", got, conns)
	}
	release := make(chan struct{})
	begun := make(chan error, 3*conns)
	var wg sync.WaitGroup
	for range 3 * conns {
		wg.Go(func() {
			tx, err := st.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			begun <- err
			if err != nil {
				return
			}
			defer tx.Rollback()
			<-release // holds its connection until the count is taken
		})
	}
	defer wg.Wait()
	defer close(release)
	timeout := time.After(10 * time.Second)
	for range conns {
		select {
		case err := <-begun:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatalf("fewer than %d transactions began within 10s", conns)
		}
	}
	var served int
	if err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&served); err != nil {
		t.Fatal(err)
	}
	if served != conns {
		t.Errorf("PostgreSQL serves the store %d connections under %d concurrent transactions, want %d (postgresConns)", served, 3*conns, conns)
	}
}
