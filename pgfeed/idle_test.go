package pgfeed

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcplive/adapter/pgfeed/pgtest"
)

type chanSink chan []string

func (s chanSink) Changed(keys ...string) { s <- keys }
func (s chanSink) ChangedAll()            { s <- nil }

// An idle connection is checked every ping interval, and the timeouts that
// schedule the checks leave it working.
func TestIdleConnectionIsChecked(t *testing.T) {
	url := pgtest.StartShared(t)
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	f, sender := New(url, quiet), New(url, quiet)
	f.cfg.pingInterval = 5 * time.Millisecond
	sink := make(chanSink, 16)
	f.Attach(sink)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		f.Close()
		sender.Close()
	}()

	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for f.pings.Load() < 5 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d pings, want 5", f.pings.Load())
		}
	}
	if err := sender.Publish(ctx, []string{"k"}); err != nil {
		t.Fatal(err)
	}
	select {
	case keys := <-sink:
		if len(keys) != 1 || keys[0] != "k" {
			t.Fatalf("got %q, want [k]", keys)
		}
	case <-deadline:
		t.Fatal("notification lost")
	}
	if h := f.Health(); h.Reconnects != 0 || h.LastError != "" {
		t.Fatalf("health %+v", h)
	}
}
