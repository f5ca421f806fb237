package pgfeed_test

import (
	"testing"
	"time"

	"github.com/mcplive/adapter/pgfeed"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// Hearing says whether every change made elsewhere reaches the adapter:
// not before Run connects, not while its connection is down (the backoff
// before the next attempt keeps it down long enough to see), again once
// it is back, and not after Run ends. With it, the adapter answers reads
// from kept results only while nothing can be missed.
func TestHearing(t *testing.T) {
	url := pgtest.StartShared(t)
	admin := connect(t, url)
	exec(t, admin, `CREATE TABLE IF NOT EXISTS hearing_items (id int PRIMARY KEY)`)
	for _, tc := range []struct {
		name string
		opts []pgfeed.Option
	}{
		{"notify", nil},
		{"wal", walFeed(pgfeed.TableSpec{Table: "hearing_items", IDColumn: "id"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append(tc.opts, pgfeed.WithLogger(quietLogger()), pgfeed.WithBackoff(500*time.Millisecond, time.Second))
			if tc.name == "wal" {
				install(t, admin, opts...)
			}
			f := pgfeed.New(url, opts...)
			f.Attach(newSink())
			if f.Hearing() {
				t.Fatal("hearing before Run")
			}
			end, _ := runFeed(t, f)
			eventually(t, "hearing once Run is connected", f.Hearing)
			terminate(t, admin, f.Health().BackendPID)
			eventually(t, "not hearing once its connection died", func() bool { return !f.Hearing() })
			eventually(t, "hearing again once it is back", f.Hearing)
			end()
			if f.Hearing() {
				t.Error("hearing after Run returned")
			}
			f.Close()
		})
	}
}
