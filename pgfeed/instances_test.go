package pgfeed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// These tests run several instances of one small application on one
// database, each an mcp-go server wrapped by the adapter with a running
// Feed, the way docs/many-instances.md wires them, and watch what their
// subscribers hear.
//
// They never sleep. A test knows that an instance has heard everything
// sent before some moment by sending a marker notification at that moment
// and waiting until the instance's feed delivers it (notifications arrive
// in commit order); it then waits for the adapter's re-runs with WaitIdle
// and looks at what the subscriptions received.

// The application: items(id, name), one live query of one item that reads
// its row, one of all items that reads the table, and a command that renames
// an item and reports the row it changed after the commit.

type itemArgs struct {
	ID int64 `json:"id"`
}

type listArgs struct {
	Prefix string `json:"prefix,omitempty"`
}

type renameArgs struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type item struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func itemKey(id int64) string { return fmt.Sprintf("items/%d", id) }

// itemsDB is an instance's connection to the database. One connection, used
// by one query at a time, is plenty for these tests.
type itemsDB struct {
	mu   sync.Mutex
	conn *pgx.Conn
}

// Queries run to completion even when the re-run that asked for them is
// cancelled: pgx closes a connection whose query is cancelled, and this one
// is shared.

func (db *itemsDB) show(ctx context.Context, id int64) (item, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var it item
	err := db.conn.QueryRow(context.WithoutCancel(ctx), `SELECT id, name FROM items WHERE id = $1`, id).Scan(&it.ID, &it.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return item{}, adapter.ErrNotFound
	}
	return it, err
}

func (db *itemsDB) list(ctx context.Context, prefix string) ([]item, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	rows, err := db.conn.Query(context.WithoutCancel(ctx),
		`SELECT id, name FROM items WHERE starts_with(name, $1) ORDER BY id`, prefix)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[item])
}

func (db *itemsDB) rename(ctx context.Context, id int64, name string) (item, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var it item
	err := db.conn.QueryRow(context.WithoutCancel(ctx),
		`UPDATE items SET name = $2 WHERE id = $1 RETURNING id, name`, id, name).Scan(&it.ID, &it.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return item{}, adapter.ErrNotFound
	}
	return it, err
}

func registerItems(a *adapter.Adapter, db *itemsDB) {
	adapter.Live(a, "items_show", "One item.", func(ctx context.Context, args itemArgs) (item, error) {
		adapter.Reads(ctx, itemKey(args.ID))
		return db.show(ctx, args.ID)
	})
	adapter.Live(a, "items_list", "The items, by id.", func(ctx context.Context, args listArgs) ([]item, error) {
		adapter.Reads(ctx, "items")
		return db.list(ctx, args.Prefix)
	})
	adapter.Command(a, "items_rename", "Renames an item.", func(ctx context.Context, args renameArgs) (item, error) {
		it, err := db.rename(ctx, args.ID, args.Name)
		if err != nil {
			return item{}, err
		}
		a.Changed(itemKey(args.ID)) // after the commit
		return it, nil
	})
}

// createItems creates the items table with rows 1..n named "item <id>",
// and, when triggers is set, the triggers that make its writes heard.
func createItems(t testing.TB, sql *pgx.Conn, n int, triggers bool) {
	t.Helper()
	exec(t, sql, `CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL)`)
	exec(t, sql, `INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, $1::int) AS g`, n)
	if triggers {
		err := pgfeed.InstallTriggers(context.Background(), sql, "", pgfeed.TableSpec{Table: "items", IDColumn: "id"})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// heard is one delivery of a feed to its adapter: Changed(keys...) or, when
// all is set, ChangedAll.
type heard struct {
	keys []string // sorted
	all  bool
}

func (h heard) String() string {
	if h.all {
		return "ChangedAll"
	}
	return fmt.Sprintf("Changed(%s)", strings.Join(h.keys, ", "))
}

// tap is the feed as its adapter sees it, with a window: every change the
// feed delivers is also sent on heard, after the adapter has taken it (its
// re-runs are scheduled by then).
type tap struct {
	*pgfeed.Feed
	heard chan heard
	done  chan struct{} // closed at the end of the test: stop reporting
}

func (t *tap) Attach(sink adapter.ChangeSink) {
	t.Feed.Attach(tapSink{next: sink, tap: t})
}

type tapSink struct {
	next adapter.ChangeSink
	tap  *tap
}

func (s tapSink) Changed(keys ...string) {
	s.next.Changed(keys...)
	s.report(heard{keys: slices.Sorted(slices.Values(keys))})
}

func (s tapSink) ChangedAll() {
	s.next.ChangedAll()
	s.report(heard{all: true})
}

func (s tapSink) report(h heard) {
	select {
	case s.tap.heard <- h:
	case <-s.tap.done:
	}
}

// instance is one server of the application, connected to the others by its
// feed.
type instance struct {
	name   string
	a      *adapter.Adapter
	feed   *pgfeed.Feed
	tap    *tap
	db     *itemsDB
	reruns *reruns
	// ChangedAll deliveries expected and not yet taken from tap.heard
	// (one per killed listening connection).
	pendingAll int
}

// startInstance starts an instance on the database at url and waits until
// its feed listens. The test's cleanup stops it.
func startInstance(t testing.TB, url, name string, opts ...pgfeed.Option) *instance {
	t.Helper()
	return startInstanceAs(t, url, url, name, opts...)
}

// startInstanceAs is startInstance with the feed connecting to feedURL,
// which may name another role than url, which the queries use.
func startInstanceAs(t testing.TB, url, feedURL, name string, opts ...pgfeed.Option) *instance {
	t.Helper()
	opts = append([]pgfeed.Option{pgfeed.WithLogger(quietLogger()), pgfeed.WithInstanceID(name)}, opts...)
	// The wiring of docs/many-instances.md, with a tap around the feed.
	feed := pgfeed.New(feedURL, opts...)
	tp := &tap{Feed: feed, heard: make(chan heard, 1<<14), done: make(chan struct{})}
	counted := &reruns{n: map[string]int{}}
	a := adapter.Wrap(server.NewMCPServer("items-"+name, "1.0.0"),
		adapter.WithChangeFeed(tp), adapter.WithLogger(quietLogger()), adapter.WithMiddleware(counted.count))
	db := &itemsDB{conn: connect(t, url)}
	registerItems(a, db)
	if feed.Source() == pgfeed.WAL {
		// Every instance installs at its start (idempotent).
		if err := feed.Install(context.Background(), db.conn); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- feed.Run(ctx) }()
	t.Cleanup(func() {
		close(tp.done)
		cancel()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("%s: Run returned %v, want nil", name, err)
			}
		case <-time.After(wait):
			t.Errorf("%s: Run did not return within %v of its context's end", name, wait)
		}
		feed.Close()
		// The adapter's last re-runs use the connection, which connect's
		// cleanup (registered earlier, so run later) closes.
		idle, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		a.WaitIdle(idle)
	})
	select {
	case <-feed.Ready():
	case err := <-ran:
		t.Fatalf("%s: Run returned early: %v", name, err)
	case <-time.After(wait):
		t.Fatalf("%s: feed not listening within %v: %+v", name, wait, feed.Health())
	}
	return &instance{name: name, a: a, feed: feed, tap: tp, db: db, reruns: counted}
}

// reruns counts the re-runs of an instance's live queries, by command and
// canonical arguments ("items_show {\"id\":1}").
type reruns struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *reruns) count(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, call *middleware.Call) (any, error) {
		if call.Origin == middleware.Live {
			r.mu.Lock()
			r.n[call.Command+" "+string(call.RawArgs)]++
			r.mu.Unlock()
		}
		return next(ctx, call)
	}
}

// take returns the counts since the last call.
func (r *reruns) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}

// next returns the next delivery of the instance's feed.
func (in *instance) next(t testing.TB) heard {
	t.Helper()
	select {
	case h := <-in.tap.heard:
		return h
	case <-time.After(wait):
		t.Fatalf("%s: nothing heard within %v (%+v)", in.name, wait, in.feed.Health())
		return heard{}
	}
}

// kill ends the instance's listening connection from the server side, as a
// failover or an administrator would. The feed reconnects by itself and
// delivers ChangedAll once it listens again (awaitReconnects waits for it);
// kill needs the feed to be listening.
func (in *instance) kill(t testing.TB, admin *pgx.Conn) {
	t.Helper()
	pid := in.feed.Health().BackendPID
	if in.pendingAll > 0 || pid == 0 {
		t.Fatalf("%s: kill while not listening", in.name)
	}
	// With a timeout, pg_terminate_backend waits until the server process
	// is gone (PostgreSQL 14 and later).
	var killed bool
	err := admin.QueryRow(context.Background(), `SELECT pg_terminate_backend($1, $2)`,
		int32(pid), wait.Milliseconds()).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("%s: pg_terminate_backend(%d) = %v, %v", in.name, pid, killed, err)
	}
	in.pendingAll++
}

// awaitReconnects waits for the ChangedAll of every kill, discarding the
// ordinary changes heard meanwhile.
func (in *instance) awaitReconnects(t testing.TB) {
	t.Helper()
	for in.pendingAll > 0 {
		if in.next(t).all {
			in.pendingAll--
		}
	}
}

var markers atomic.Int64

// settle returns once every instance has heard and processed everything
// sent on the channel before the call: it sends a marker by plain SQL, takes
// each instance's deliveries up to the marker, and waits until the adapters
// are idle. It returns what each instance heard before the marker.
func settle(t testing.TB, sql *pgx.Conn, instances ...*instance) map[*instance][]heard {
	t.Helper()
	// Changed publishes in the background; WaitIdle waits for it, so that
	// every key published so far precedes the marker on the channel (in
	// the log, for WAL).
	waitIdleAll(t, instances)
	marker := fmt.Sprintf("marker/%d", markers.Add(1))
	if instances[0].feed.Source() == pgfeed.WAL {
		emit(t, sql, fmt.Sprintf(`{"i":"sql","k":[%q]}`, marker))
	} else {
		notify(t, sql, fmt.Sprintf(`{"i":"sql","k":[%q]}`, marker))
	}
	got := make(map[*instance][]heard, len(instances))
	for _, in := range instances {
		got[in] = []heard{} // heard nothing, rather than not asked
		for {
			h := in.next(t)
			if !h.all && slices.Equal(h.keys, []string{marker}) {
				break
			}
			got[in] = append(got[in], h)
		}
	}
	waitIdleAll(t, instances)
	return got
}

func waitIdleAll(t testing.TB, instances []*instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, in := range instances {
		if err := in.a.WaitIdle(ctx); err != nil {
			t.Fatalf("%s: WaitIdle: %v (%+v)", in.name, err, in.a.LiveStats())
		}
	}
}

// expectHeard fails unless h lists exactly want, in order.
func expectHeard(t testing.TB, in *instance, h []heard, want ...heard) {
	t.Helper()
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("%s heard %v, want %v", in.name, h, want)
	}
}

func changed(keys ...string) heard { return heard{keys: slices.Sorted(slices.Values(keys))} }

// expectNotified fails unless sub received exactly one notification for
// each of uris since the previous call, and nothing else.
func expectNotified(t testing.TB, who string, sub *adaptertest.Subscription, uris ...string) {
	t.Helper()
	got := slices.Sorted(slices.Values(sub.Take()))
	want := slices.Sorted(slices.Values(uris))
	if !slices.Equal(got, want) {
		t.Errorf("%s notified of %q, want %q, once each", who, got, want)
	}
}

func rename(t testing.TB, c *adaptertest.Client, id int64, name string) {
	t.Helper()
	res, err := c.CallTool("items_rename", renameArgs{ID: id, Name: name})
	if err != nil || res.IsError {
		t.Fatalf("items_rename %d: %+v, %v", id, res, err)
	}
}

func read(t testing.TB, c *adaptertest.Client, uri string) string {
	t.Helper()
	body, err := c.Read(uri)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	return body
}

const (
	listURI = "app://items_list"
	oneURI  = "app://items_show/1"
	twoURI  = "app://items_show/2"
)

// A write through one instance reaches the subscribers of the other, and a
// write by plain SQL those of both when the triggers are installed; each
// subscriber hears one notification per write, although with the triggers
// the other instances hear a write through an instance twice.
func TestWritesReachEveryInstanceOnce(t *testing.T) {
	for _, triggers := range []bool{true, false} {
		t.Run(fmt.Sprintf("triggers=%v", triggers), func(t *testing.T) {
			url := pgtest.StartShared(t)
			sql := connect(t, url)
			createItems(t, sql, 3, triggers)
			a, b := startInstance(t, url, "a"), startInstance(t, url, "b")
			writer := adaptertest.New(t, a.a)
			subs := map[string]*adaptertest.Subscription{}
			for _, in := range []*instance{a, b} {
				sub, err := adaptertest.New(t, in.a).Listen(listURI, oneURI, twoURI)
				if err != nil || len(sub.Acknowledged) != 3 {
					t.Fatalf("%s: listen: %+v, %v", in.name, sub, err)
				}
				subs[in.name] = sub
			}

			// Through A: the command commits, then calls Changed, which
			// re-runs A's queries and publishes the row's key.
			rename(t, writer, 1, "uno")
			h := settle(t, sql, a, b)
			if triggers {
				// The trigger's notification reaches both, A's own
				// Publish only B (and after it: it was sent after the
				// commit). B's second re-run finds what the first found.
				expectHeard(t, a, h[a], changed("items/1"))
				expectHeard(t, b, h[b], changed("items/1"), changed("items/1"))
			} else {
				expectHeard(t, a, h[a])
				expectHeard(t, b, h[b], changed("items/1"))
			}
			expectNotified(t, "a", subs["a"], listURI, oneURI)
			expectNotified(t, "b", subs["b"], listURI, oneURI)
			if body := read(t, adaptertest.New(t, b.a), oneURI); !strings.Contains(body, `"uno"`) {
				t.Errorf("b reads %s after the write through a", body)
			}

			// A write that changes no result is heard and notifies
			// nobody.
			rename(t, writer, 3, "item 3")
			settle(t, sql, a, b)
			expectNotified(t, "a", subs["a"])
			expectNotified(t, "b", subs["b"])

			// By plain SQL, as psql or another service would write.
			exec(t, sql, `UPDATE items SET name = 'dos' WHERE id = 2`)
			h = settle(t, sql, a, b)
			if triggers {
				expectHeard(t, a, h[a], changed("items/2"))
				expectHeard(t, b, h[b], changed("items/2"))
				expectNotified(t, "a", subs["a"], listURI, twoURI)
				expectNotified(t, "b", subs["b"], listURI, twoURI)
			} else {
				// Nobody reported it: the triggers are what make such
				// writes heard.
				expectHeard(t, a, h[a])
				expectHeard(t, b, h[b])
				expectNotified(t, "a", subs["a"])
				expectNotified(t, "b", subs["b"])
			}
		})
	}
}

// A statement that writes many rows makes the row trigger send one
// notification per row; every instance hears them all, coalesces the re-runs
// they cause, and notifies each subscriber once. A table whose triggers send
// no row ids sends one notification per transaction.
func TestBulkWriteNotifiesOnce(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	createItems(t, sql, 3, true)
	a, b := startInstance(t, url, "a"), startInstance(t, url, "b")
	subs := map[*instance]*adaptertest.Subscription{}
	for _, in := range []*instance{a, b} {
		sub, err := adaptertest.New(t, in.a).Listen(listURI, oneURI)
		if err != nil || len(sub.Acknowledged) != 2 {
			t.Fatalf("%s: listen: %+v, %v", in.name, sub, err)
		}
		subs[in] = sub
	}

	const rows = 200
	exec(t, sql, `INSERT INTO items SELECT g, 'bulk ' || g FROM generate_series(100, 99 + $1::int) AS g`, rows)
	h := settle(t, sql, a, b)
	for _, in := range []*instance{a, b} {
		if len(h[in]) != rows {
			t.Errorf("%s heard %d notifications for %d rows, want one per row", in.name, len(h[in]), rows)
		}
		expectNotified(t, in.name, subs[in], listURI)
	}

	// TRUNCATE is one statement-level notification of the table.
	exec(t, sql, `TRUNCATE items`)
	h = settle(t, sql, a, b)
	for _, in := range []*instance{a, b} {
		expectHeard(t, in, h[in], changed("items"))
		expectNotified(t, in.name, subs[in], listURI, oneURI)
	}

	// Without an id column every row sends the same payload, and
	// PostgreSQL delivers identical notifications of one transaction once.
	exec(t, sql, `CREATE TABLE events (at bigint)`)
	if err := pgfeed.InstallTriggers(context.Background(), sql, "", pgfeed.TableSpec{Table: "events"}); err != nil {
		t.Fatal(err)
	}
	exec(t, sql, `INSERT INTO events SELECT g FROM generate_series(1, $1::int) AS g`, rows)
	h = settle(t, sql, a, b)
	for _, in := range []*instance{a, b} {
		expectHeard(t, in, h[in], changed("events"))
	}
}

// watcher is a client that subscribes to URIs and, like an agent keeping a
// view up to date, reads a URI again each time it is notified of it.
type watcher struct {
	name  string
	c     *adaptertest.Client
	sub   *adaptertest.Subscription
	views map[string]string // the last read of each URI
}

func newWatcher(t testing.TB, in *instance, uris ...string) *watcher {
	t.Helper()
	c := adaptertest.New(t, in.a)
	sub, err := c.Listen(uris...)
	if err != nil || len(sub.Acknowledged) != len(uris) {
		t.Fatalf("%s: listen: %+v, %v", in.name, sub, err)
	}
	w := &watcher{name: in.name, c: c, sub: sub, views: map[string]string{}}
	for _, u := range uris {
		w.views[u] = read(t, c, u)
	}
	return w
}

// react reads again every URI notified since the last call.
func (w *watcher) react(t testing.TB) {
	t.Helper()
	for _, u := range w.sub.Take() {
		w.views[u] = read(t, w.c, u)
	}
}

// Killing the listening connections of the feeds while writes go on loses
// nothing: the notifications sent while a feed is away are lost, but it
// re-runs every live query once it listens again, so every subscriber ends up
// notified of the last state of what it watches.
//
// The outages are made long enough to lose notifications for certain: while
// one lasts the database refuses new connections, so the feeds cannot
// reconnect before the writes of the outage are made, and the stream of
// writes ends with an outage, so no later write hides a lost one.
func TestKilledListenerLosesNoUpdate(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	const rows = 5
	createItems(t, sql, rows, true)
	// A database's connections are switched off from another one.
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := cfg.Database
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	allowConnections := func(allow bool) {
		exec(t, admin, fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %v`, pgx.Identifier{db}.Sanitize(), allow))
	}
	t.Cleanup(func() { allowConnections(true) })

	// Quick reconnections, so that the test does not wait for them.
	quick := pgfeed.WithBackoff(2*time.Millisecond, 20*time.Millisecond)
	a, b := startInstance(t, url, "a", quick), startInstance(t, url, "b", quick)
	uris := []string{listURI}
	for id := range rows {
		uris = append(uris, fmt.Sprintf("app://items_show/%d", id+1))
	}
	watchers := []*watcher{newWatcher(t, a, uris...), newWatcher(t, b, uris...)}
	writer := adaptertest.New(t, a.a)

	rng := rand.New(rand.NewPCG(8, 1))
	writes := 0
	write := func() {
		id, name := int64(rng.IntN(rows)+1), fmt.Sprintf("v%d", writes)
		if writes%2 == 0 {
			rename(t, writer, id, name) // through A, which publishes
		} else {
			exec(t, sql, `UPDATE items SET name = $2 WHERE id = $1`, id, name)
		}
		writes++
		for _, w := range watchers {
			w.react(t)
		}
	}
	for _, killed := range [][]*instance{{b}, {a}, {a, b}, {b}, {a, b}} {
		for range 20 {
			write()
		}
		// Every outage starts with both feeds listening.
		a.awaitReconnects(t)
		b.awaitReconnects(t)
		allowConnections(false)
		for _, in := range killed {
			in.kill(t, sql)
		}
		for range 10 {
			write()
		}
		allowConnections(true)
	}

	// The writes have stopped. Once each feed has listened again and
	// re-run everything, and everyone has processed what was sent, the
	// watchers' views must be the database's.
	a.awaitReconnects(t)
	b.awaitReconnects(t)
	settle(t, sql, a, b)
	truth := adaptertest.New(t, a.a)
	for _, w := range watchers {
		w.react(t)
		for _, u := range uris {
			if want := read(t, truth, u); w.views[u] != want {
				t.Errorf("%s's subscriber to %s last saw %s, but it is now %s", w.name, u, w.views[u], want)
			}
		}
	}
	for in, kills := range map[*instance]int{a: 3, b: 4} {
		h := in.feed.Health()
		if h.Reconnects != kills || !h.Connected {
			t.Errorf("%s: health %+v, want %d reconnections and connected", in.name, h, kills)
		}
		t.Logf("%s: %d reconnections, %d notifications received, %d re-runs, %d notifications to subscribers",
			in.name, h.Reconnects, h.Received, in.a.LiveStats().Reruns, in.a.LiveStats().Notified)
	}
}
