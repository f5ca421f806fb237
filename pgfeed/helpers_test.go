package pgfeed_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcplive/adapter/pgfeed"
)

// wait bounds every wait for something that should happen; tests never
// sleep.
const wait = 10 * time.Second

// sink is a ChangeSink that records what it receives on channels, so that
// tests can wait for it with select.
type sink struct {
	changed chan []string
	all     chan struct{}
}

func newSink() *sink {
	return &sink{changed: make(chan []string, 4096), all: make(chan struct{}, 64)}
}

func (s *sink) Changed(keys ...string) {
	s.changed <- slices.Clone(keys)
}

func (s *sink) ChangedAll() {
	s.all <- struct{}{}
}

// next returns the next Changed call's keys, sorted.
func (s *sink) next(t testing.TB) []string {
	t.Helper()
	select {
	case keys := <-s.changed:
		slices.Sort(keys)
		return keys
	case <-s.all:
		t.Fatal("got ChangedAll, want Changed")
	case <-time.After(wait):
		t.Fatalf("no Changed within %v", wait)
	}
	return nil
}

// expect fails unless the next Changed call reports exactly want.
func (s *sink) expect(t testing.TB, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := s.next(t); !slices.Equal(got, want) {
		t.Fatalf("Changed(%q), want Changed(%q)", got, want)
	}
}

// expectAll fails unless the next call is ChangedAll.
func (s *sink) expectAll(t testing.TB) {
	t.Helper()
	select {
	case <-s.all:
	case keys := <-s.changed:
		t.Fatalf("got Changed(%q), want ChangedAll", keys)
	case <-time.After(wait):
		t.Fatalf("no ChangedAll within %v", wait)
	}
}

// expectNothing fails if a call is pending. It is meaningful after a later
// notification has been seen: notifications arrive in order, so anything
// that was going to arrive before it has.
func (s *sink) expectNothing(t testing.TB) {
	t.Helper()
	select {
	case keys := <-s.changed:
		t.Fatalf("unexpected Changed(%q)", keys)
	case <-s.all:
		t.Fatal("unexpected ChangedAll")
	default:
	}
}

// running is a feed whose Run is running in the background.
type running struct {
	*pgfeed.Feed
	sink *sink
	stop func() // cancels Run and waits for it to return nil
}

// startFeed starts a feed on url and waits until it listens. The test's
// cleanup stops it and checks that Run returned nil.
func startFeed(t testing.TB, url string, opts ...pgfeed.Option) *running {
	t.Helper()
	opts = append([]pgfeed.Option{pgfeed.WithLogger(quietLogger())}, opts...)
	f := pgfeed.New(url, opts...)
	s := newSink()
	f.Attach(s)
	end, done := runFeed(t, f)
	stop := sync.OnceFunc(func() {
		end()
		f.Close()
	})
	t.Cleanup(stop)
	select {
	case <-f.Ready():
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(wait):
		t.Fatalf("feed not listening within %v: %+v", wait, f.Health())
	}
	return &running{Feed: f, sink: s, stop: stop}
}

// runFeed runs f.Run in the background. end cancels it and checks that it
// returned nil within wait; done has Run's result, for a Run that returns
// early.
func runFeed(t testing.TB, f *pgfeed.Feed) (end func(), done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- f.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-result:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(wait):
			t.Errorf("Run did not return within %v of its context's end", wait)
		}
	}, result
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// connect opens a plain connection, as psql or another service would.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t testing.TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// notify sends a raw payload on the default channel, as a trigger would.
func notify(t testing.TB, conn *pgx.Conn, payload string) {
	t.Helper()
	exec(t, conn, "SELECT pg_notify($1, $2)", pgfeed.DefaultChannel, payload)
}

func publish(t testing.TB, f *pgfeed.Feed, keys ...string) {
	t.Helper()
	if err := f.Publish(context.Background(), keys); err != nil {
		t.Fatalf("Publish(%q): %v", keys, err)
	}
}
