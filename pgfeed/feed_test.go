package pgfeed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
	"go.uber.org/goleak"
)

func TestPublishReachesOthersNotItself(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url), startFeed(t, url)
	sql := connect(t, url)

	publish(t, a.Feed, "customers", "customers/12")
	b.sink.expect(t, "customers", "customers/12")

	// A notification sent after A's: once A has it, A has had its own too.
	notify(t, sql, `{"i":"sql","k":["marker"]}`)
	a.sink.expect(t, "marker")
	b.sink.expect(t, "marker")
	a.sink.expectNothing(t)

	publish(t, b.Feed, "orders/3")
	a.sink.expect(t, "orders/3")

	if h := a.Health(); h.Published != 1 || h.Received != 3 || h.LastNotification.IsZero() || !h.Connected {
		t.Errorf("A's health = %+v, want 1 published, 3 received, connected", h)
	}
}

// TestPublishOfAKeyTooLongForANotification: Publish failed for a table
// key over NOTIFY's limit, and the other instances missed the change. They
// re-run everything instead.
func TestPublishOfAKeyTooLongForANotification(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url), startFeed(t, url)
	publish(t, b.Feed, "orders", strings.Repeat("t", 8000))
	a.sink.expectAll(t)
	// The empty payload names no instance to skip: the publisher's own Run
	// re-runs everything too, as Publish's documentation says.
	b.sink.expectAll(t)
}

// TestPublishAll: every instance, the publisher's own included (the empty
// payload names no instance to skip), hears that anything may have changed.
func TestPublishAll(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url), startFeed(t, url)
	if err := b.PublishAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.sink.expectAll(t)
	b.sink.expectAll(t)
	if h := b.Health(); h.Published != 1 {
		t.Errorf("B's health = %+v, want 1 published", h)
	}
}

func TestPayloadsFromElsewhere(t *testing.T) {
	url := pgtest.StartShared(t)
	a := startFeed(t, url, pgfeed.WithInstanceID("a"))
	sql := connect(t, url)

	notify(t, sql, `{"i":"other","k":["x","x/1"],"future":true}`)
	a.sink.expect(t, "x", "x/1")

	notify(t, sql, `{"i":"a","k":["mine"]}`) // looks like A's own: skipped
	notify(t, sql, `{"k":["anonymous"]}`)
	a.sink.expect(t, "anonymous")

	// A bare NOTIFY, or something that is not ours to read, may mean
	// anything changed.
	exec(t, sql, "NOTIFY "+pgfeed.DefaultChannel)
	a.sink.expectAll(t)
	notify(t, sql, "customers")
	a.sink.expectAll(t)
	if h := a.Health(); h.Reconnects != 0 {
		t.Errorf("Reconnects = %d, want 0", h.Reconnects)
	}
}

func TestChannelsAreSeparate(t *testing.T) {
	url := pgtest.StartShared(t)
	a := startFeed(t, url, pgfeed.WithChannel("App Two")) // needs quoting
	b := startFeed(t, url)
	other := startFeed(t, url, pgfeed.WithChannel("App Two"))

	publish(t, b.Feed, "default-channel")
	publish(t, other.Feed, "second-channel")
	a.sink.expect(t, "second-channel")
	publish(t, a.Feed, "second-channel-again")
	other.sink.expect(t, "second-channel-again")
	publish(t, other.Feed, "marker")
	a.sink.expect(t, "marker")
	if a.Channel() != "App Two" || b.Channel() != pgfeed.DefaultChannel {
		t.Errorf("channels %q, %q", a.Channel(), b.Channel())
	}
}

func TestHugeKeyListFallsBackToTables(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url), startFeed(t, url)

	var keys []string
	for i := range 3000 {
		keys = append(keys, fmt.Sprintf("customers/%d", i), fmt.Sprintf("orders/%d", i))
	}
	publish(t, a.Feed, keys...)
	b.sink.expect(t, "customers", "orders")

	// So many tables that even their names exceed one notification: they
	// arrive spread over several.
	var tables []string
	for i := range 500 {
		tables = append(tables, fmt.Sprintf("table_with_a_rather_long_name_number_%04d/1", i))
	}
	publish(t, a.Feed, tables...)
	got := map[string]bool{}
	calls := 0
	for len(got) < len(tables) {
		for _, k := range b.sink.next(t) {
			if got[k] {
				t.Fatalf("key %q delivered twice", k)
			}
			got[k] = true
		}
		calls++
	}
	for _, k := range tables {
		if table, _, _ := strings.Cut(k, "/"); !got[table] {
			t.Fatalf("table %q missing", table)
		}
	}
	if calls < 2 {
		t.Errorf("%d keys arrived in %d notification(s), want several", len(tables), calls)
	}
}

// A key with an empty table ("/x") has nothing wider to go as: the adapter
// ignores the empty key, so widening it to "" would lose the change.
func TestWideningKeepsKeysWithoutTable(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url), startFeed(t, url)

	keys := []string{"/x"}
	for i := range 3000 {
		keys = append(keys, fmt.Sprintf("customers/%d", i))
	}
	publish(t, a.Feed, keys...)
	b.sink.expect(t, "/x", "customers")
}

func TestReconnectRerunsEverythingOnce(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url, pgfeed.WithBackoff(10*time.Millisecond, 50*time.Millisecond)), startFeed(t, url)
	admin := connect(t, url)

	for round := 1; round <= 2; round++ {
		pid := a.Health().BackendPID
		if pid == 0 {
			t.Fatal("no backend pid while connected")
		}
		var killed bool
		if err := admin.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", pid).Scan(&killed); err != nil || !killed {
			t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, killed, err)
		}
		a.sink.expectAll(t) // called once A listens again

		h := a.Health()
		if h.Reconnects != round || !h.Connected || h.BackendPID == pid || h.LastError == "" {
			t.Fatalf("round %d: health %+v, want %d reconnects, connected with a new pid, an error", round, h, round)
		}
		// Notifications flow again, and no second ChangedAll came first.
		publish(t, b.Feed, fmt.Sprintf("after/%d", round))
		a.sink.expect(t, fmt.Sprintf("after/%d", round))
		a.sink.expectNothing(t)
	}
	// B lost nothing and re-ran nothing.
	b.sink.expectNothing(t)
	if h := b.Health(); h.Reconnects != 0 {
		t.Errorf("B reconnected %d times", h.Reconnects)
	}
}

// Publish reconnects by itself after its connection is killed, and the
// change it was sending when it found the connection dead is not lost:
// nothing would make the other instances catch up on it.
func TestPublishRecoversFromLostConnection(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url), startFeed(t, url)
	admin := connect(t, url)

	publish(t, a.Feed, "one")
	b.sink.expect(t, "one")
	// Every backend but the admin's and the listeners': A's publisher.
	// With a timeout, pg_terminate_backend waits until it is gone.
	exec(t, admin, `SELECT pg_terminate_backend(pid, $2) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> ALL ($1::int[])`,
		[]int32{int32(a.Health().BackendPID), int32(b.Health().BackendPID)}, wait.Milliseconds())

	publish(t, a.Feed, "two")
	b.sink.expect(t, "two")
	publish(t, a.Feed, "three")
	b.sink.expect(t, "three")
	if h := a.Health(); h.Published != 3 {
		t.Errorf("Published = %d, want 3", h.Published)
	}
}

func TestRunStopsAndLeavesNothing(t *testing.T) {
	// First registered, so it runs after every other cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	url := pgtest.StartShared(t)
	a := startFeed(t, url)
	publish(t, a.Feed, "x")
	a.stop()
	if h := a.Health(); h.Running || h.Connected {
		t.Errorf("after Run returned: %+v", h)
	}
	if err := a.Publish(context.Background(), []string{"y"}); !errors.Is(err, pgfeed.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
}

// With no server to talk to, Run retries until its context ends, reports
// the trouble in Health, and still returns promptly.
func TestRunWithoutServer(t *testing.T) {
	// First registered, so it runs after every other cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := pgfeed.New("postgres://postgres@127.0.0.1:1/none?connect_timeout=1",
		pgfeed.WithLogger(quietLogger()), pgfeed.WithBackoff(time.Millisecond, 5*time.Millisecond))
	f.Attach(newSink())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	deadline := time.After(wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for f.Health().LastError == "" {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("no error reported")
		}
	}
	if err := f.Publish(ctx, []string{"x"}); err == nil {
		t.Error("Publish without a server succeeded")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}
	if h := f.Health(); h.Connected || h.Running || h.Reconnects != 0 {
		t.Errorf("health %+v", h)
	}
	f.Close()
}

func TestRunRefusesToStart(t *testing.T) {
	// A Run that starts would retry until this ends.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := pgfeed.New("postgres://127.0.0.1/x").Run(ctx); err == nil || !strings.Contains(err.Error(), "Attach") {
		t.Errorf("Run without Attach = %v", err)
	}
	for name, f := range map[string]*pgfeed.Feed{
		"bad url":      pgfeed.New("postgres://%zz"),
		"long channel": pgfeed.New("postgres://127.0.0.1/x", pgfeed.WithChannel(strings.Repeat("c", 64))),
		"sql instance": pgfeed.New("postgres://127.0.0.1/x", pgfeed.WithInstanceID("sql")),
		"backoff":      pgfeed.New("postgres://127.0.0.1/x", pgfeed.WithBackoff(time.Second, time.Millisecond)),
		// LISTEN would drop the NUL and listen on "ab", where nothing
		// is sent; pg_notify refuses it.
		"nul in channel": pgfeed.New("postgres://127.0.0.1/x", pgfeed.WithChannel("a\x00b")),
		// JSON would carry it as "\uFFFD", so the feed would not know
		// its own notifications and would hear its changes back.
		"non-UTF-8 instance": pgfeed.New("postgres://127.0.0.1/x", pgfeed.WithInstanceID("caf\xe9")),
	} {
		f.Attach(newSink())
		if err := f.Run(ctx); err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
		if err := f.Publish(ctx, []string{"k"}); err == nil {
			t.Errorf("%s: Publish succeeded", name)
		}
	}
}

func TestHealthHandler(t *testing.T) {
	url := pgtest.StartShared(t)
	a := startFeed(t, url)
	h := a.HealthHandler()
	if code := serve(t, h); code != 200 {
		t.Errorf("connected: status %d, want 200", code)
	}
	a.stop()
	if code := serve(t, h); code != 503 {
		t.Errorf("stopped: status %d, want 503", code)
	}
}

// A feed whose Run is started again after it returned missed what was sent
// in between, as after a lost connection: the new Run catches up with
// ChangedAll once it listens.
func TestRunAgainRerunsEverything(t *testing.T) {
	url := pgtest.StartShared(t)
	b := startFeed(t, url)
	f := pgfeed.New(url, pgfeed.WithLogger(quietLogger()))
	defer f.Close()
	s := newSink()
	f.Attach(s)
	stop, _ := runFeed(t, f)
	select {
	case <-f.Ready():
	case <-time.After(wait):
		t.Fatal("not listening")
	}
	stop()
	publish(t, b.Feed, "while/stopped") // sent while nothing listens: lost

	stop, _ = runFeed(t, f)
	defer stop()
	deadline := time.After(wait)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !f.Health().Connected {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("Run started again does not listen")
		}
	}
	publish(t, b.Feed, "after")
	// Connected may show before Run has caught up, so the catch-up and the
	// notification after it come in either order.
	select {
	case <-s.all:
	case <-time.After(wait):
		t.Fatal("Run started again did not catch up with ChangedAll")
	}
	s.expect(t, "after")
	s.expectNothing(t)
}

// JSON cannot carry a key that is not valid UTF-8: encoding/json would turn
// its bad bytes into U+FFFD, and the other instances would hear of a key
// that no query read. Such a key reaches them as its table, and one whose
// table is not valid UTF-8 either as a change of everything.
func TestKeysThatAreNotUTF8(t *testing.T) {
	url := pgtest.StartShared(t)
	a, b := startFeed(t, url), startFeed(t, url)

	// A row id taken from a percent-decoded URI ("files/caf%E9").
	publish(t, a.Feed, "files/caf\xe9", "orders/1")
	b.sink.expect(t, "files", "orders/1")

	publish(t, a.Feed, "caf\xe9/1")
	b.sink.expectAll(t)
	publish(t, a.Feed, "marker")
	b.sink.expect(t, "marker")
	b.sink.expectNothing(t)
}
