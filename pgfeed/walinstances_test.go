package pgfeed_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// Instances of the items application on the WAL source, as
// instances_test.go runs them on NOTIFY.

var itemsWAL = walFeed(pgfeed.TableSpec{Table: "items", IDColumn: "id"})

// showURIs are the URIs of items_show for ids 1..n.
func showURIs(n int) []string {
	uris := make([]string, n)
	for i := range uris {
		uris[i] = fmt.Sprintf("app://items_show/%d", i+1)
	}
	return uris
}

// showRerun is how reruns names a re-run of items_show of id.
func showRerun(id int) string { return fmt.Sprintf(`items_show {"id":%d}`, id) }

const listRerun = `items_list {}`

// Writes by psql and through an instance reach the subscribers of every
// instance, each write re-running the queries that read its row or the
// table and no other: one of twenty subscribed items_show, and the list.
// An instance hears its own writes in the log too, which costs it a
// second re-run of the same queries and notifies no one twice.
func TestWALWritesReachEveryInstance(t *testing.T) {
	url := pgtest.StartShared(t)
	sql := connect(t, url)
	createItems(t, sql, 20, false)
	a, b := startInstance(t, url, "a", itemsWAL...), startInstance(t, url, "b", itemsWAL...)
	uris := append(showURIs(20), listURI)
	subs := map[*instance]*adaptertest.Subscription{}
	for _, in := range []*instance{a, b} {
		sub, err := adaptertest.New(t, in.a).Listen(uris...)
		if err != nil || len(sub.Acknowledged) != len(uris) {
			t.Fatalf("%s: listen: %+v, %v", in.name, sub, err)
		}
		subs[in] = sub
	}
	checkReruns := func(in *instance, want map[string]int) {
		t.Helper()
		if got := in.reruns.take(); !maps.Equal(got, want) {
			t.Errorf("%s re-ran %v, want %v", in.name, got, want)
		}
	}

	psql(t, url, `UPDATE items SET name = 'uno' WHERE id = 1`)
	h := settle(t, sql, a, b)
	for _, in := range []*instance{a, b} {
		expectHeard(t, in, h[in], changed("items/1"))
		checkReruns(in, map[string]int{showRerun(1): 1, listRerun: 1})
		expectNotified(t, in.name, subs[in], listURI, oneURI)
	}

	// Through A: A's own Changed, then the log, on A; the log on B. A's
	// Publish sends nothing: the log carries the row.
	rename(t, adaptertest.New(t, a.a), 2, "dos")
	h = settle(t, sql, a, b)
	expectHeard(t, a, h[a], changed("items/2"))
	expectHeard(t, b, h[b], changed("items/2"))
	checkReruns(a, map[string]int{showRerun(2): 2, listRerun: 2})
	checkReruns(b, map[string]int{showRerun(2): 1, listRerun: 1})
	for _, in := range []*instance{a, b} {
		expectNotified(t, in.name, subs[in], listURI, twoURI)
		if p := in.feed.Health().Published; p != 0 {
			t.Errorf("%s published %d messages, want none", in.name, p)
		}
	}

	// An insert reaches the list, which reads the table, and no
	// items_show.
	psql(t, url, `INSERT INTO items VALUES (21, 'veintiuno')`)
	h = settle(t, sql, a, b)
	for _, in := range []*instance{a, b} {
		expectHeard(t, in, h[in], changed("items/21"))
		checkReruns(in, map[string]int{listRerun: 1})
		expectNotified(t, in.name, subs[in], listURI)
	}

	// A transaction of several rows is one Changed, which re-runs each
	// row's query once.
	psql(t, url, `UPDATE items SET name = name || '!' WHERE id IN (3, 4, 5)`)
	h = settle(t, sql, a, b)
	for _, in := range []*instance{a, b} {
		expectHeard(t, in, h[in], changed("items/3", "items/4", "items/5"))
		checkReruns(in, map[string]int{listRerun: 1, showRerun(3): 1, showRerun(4): 1, showRerun(5): 1})
		t.Logf("%s %+v %s", in.name, in.a.LiveStats(), read(t, adaptertest.New(t, in.a), "app://items_show/3"))
		expectNotified(t, in.name, subs[in], listURI, showURIs(5)[2], showURIs(5)[3], showURIs(5)[4])
	}
}

// The replication connection of an instance is killed (pg_terminate_backend)
// while psql keeps writing, and stays down for some writes. Once it is
// back, every change made meanwhile re-runs exactly the queries it
// affects, once each: the feed resumes from its position, no ChangedAll.
// NOTIFY, in the same run, has lost what was sent meanwhile and re-runs
// every live query, which the WAL source exists to avoid.
func TestWALReplicationKilledWhilePsqlWrites(t *testing.T) {
	for _, source := range []pgfeed.Source{pgfeed.WAL, pgfeed.Notify} {
		t.Run(string(source), func(t *testing.T) {
			url := pgtest.StartShared(t)
			sql := connect(t, url)
			const rows, written = 20, 12
			createItems(t, sql, rows, source == pgfeed.Notify)
			opts := itemsWAL
			if source == pgfeed.Notify {
				opts = []pgfeed.Option{quickBackoff}
			}
			// B's feed alone connects as a role that loses its right to
			// log in during the outage; A's stays connected throughout.
			feedURL, allowFeed := feedRole(t, sql, url)
			a, b := startInstance(t, url, "a", opts...), startInstanceAs(t, url, feedURL, "b", opts...)
			uris := append(showURIs(rows), listURI)
			watchers := []*watcher{newWatcher(t, a, uris...), newWatcher(t, b, uris...)}

			// psql writes rows 1..12, one transaction each, one after the
			// other. The outage begins after the fourth (and before the
			// seventh) and ends after the tenth (and before the eleventh).
			outageBegun, outageOver := make(chan struct{}), make(chan struct{})
			wrote := make(chan error, written)
			bin := psqlBinary(t)
			go func() {
				for id := 1; id <= written; id++ {
					switch id {
					case 7:
						<-outageBegun
					case 11:
						<-outageOver
					}
					wrote <- psqlRun(bin, url, fmt.Sprintf(`UPDATE items SET name = 'v%d' WHERE id = %d`, id, id))
				}
			}()
			for id := 1; id <= written; id++ {
				if err := <-wrote; err != nil {
					t.Fatal(err)
				}
				switch id {
				case 4:
					allowFeed(false)
					terminate(t, sql, b.feed.Health().BackendPID)
					close(outageBegun)
				case 10:
					if h := b.feed.Health(); h.Connected {
						t.Errorf("b's feed is connected during the outage: %+v", h)
					}
					allowFeed(true)
					close(outageOver)
				}
			}
			if source == pgfeed.Notify {
				b.pendingAll++
				b.awaitReconnects(t) // the writes after the outage follow it
			} else {
				eventually(t, "b's feed streaming again", func() bool { return b.feed.Health().Connected })
			}
			h := settle(t, sql, a, b)

			fb := b.feed.Health()
			rb := b.reruns.take()
			if source == pgfeed.WAL {
				var want []heard
				for id := 1; id <= written; id++ {
					want = append(want, changed(itemKey(int64(id))))
				}
				expectHeard(t, b, h[b], want...)
				expectHeard(t, a, h[a], want...)
				if fb.Reconnects != 1 || fb.Fallbacks != 0 {
					t.Errorf("b's feed: %+v, want 1 reconnection and no fallback", fb)
				}
				for id := 1; id <= rows; id++ {
					if want := map[bool]int{true: 1, false: 0}[id <= written]; rb[showRerun(id)] != want {
						t.Errorf("b re-ran items_show %d %d times, want %d", id, rb[showRerun(id)], want)
					}
				}
			} else {
				if fb.Reconnects != 1 || fb.Fallbacks != 1 {
					t.Errorf("b's feed: %+v, want 1 reconnection and 1 fallback", fb)
				}
				for id := written + 1; id <= rows; id++ {
					if rb[showRerun(id)] == 0 {
						t.Errorf("b did not re-run items_show %d, which no write changed, after the reconnection", id)
					}
				}
			}
			t.Logf("%s: b re-ran %d of %d items_show queries for %d changed rows; feed %+v",
				source, len(slices.DeleteFunc(slices.Collect(maps.Keys(rb)), func(k string) bool { return k == listRerun })), rows, written, fb)

			// Every subscriber, on both instances, ends with what the
			// database holds.
			truth := adaptertest.New(t, a.a)
			for _, w := range watchers {
				w.react(t)
				for _, u := range uris {
					if want := read(t, truth, u); w.views[u] != want {
						t.Errorf("%s's subscriber to %s last saw %s, but it is now %s", w.name, u, w.views[u], want)
					}
				}
			}
		})
	}
}

// A transaction reaches the log before other sessions can see it: a
// server with a synchronous standby that does not answer holds the
// committing session there, its commit flushed and decodable. A re-run
// made then reads the old row, and the subscriber would never hear of the
// write. The feed waits until the transaction is visible, and then the
// subscriber hears it. This test has a server of its own: it changes the
// server's settings.
func TestWALWaitsUntilACommitIsVisible(t *testing.T) {
	url := pgtest.Start(t)
	sql := connect(t, url)
	createItems(t, sql, 1, false)
	a := startInstance(t, url, "a", itemsWAL...)
	sub, err := adaptertest.New(t, a.a).Listen(oneURI)
	if err != nil || len(sub.Acknowledged) != 1 {
		t.Fatalf("listen: %+v, %v", sub, err)
	}

	exec(t, sql, `ALTER SYSTEM SET synchronous_standby_names = 'nobody'`)
	exec(t, sql, `SELECT pg_reload_conf()`)
	committed := make(chan error, 1)
	bin := psqlBinary(t)
	go func() { committed <- psqlRun(bin, url, `UPDATE items SET name = 'visible at last' WHERE id = 1`) }()
	eventually(t, "the feed waiting for the invisible transaction", func() bool { return pgfeed.VisibilityWaits(a.feed) > 0 })
	exec(t, sql, `ALTER SYSTEM RESET synchronous_standby_names`)
	exec(t, sql, `SELECT pg_reload_conf()`)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	h := settle(t, sql, a)
	expectHeard(t, a, h[a], changed("items/1"))
	expectNotified(t, "a", sub, oneURI)
	if body := read(t, adaptertest.New(t, a.a), oneURI); !strings.Contains(body, "visible at last") {
		t.Errorf("a reads %s", body)
	}
}
