package pgfeed_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mcplive/adapter/pgfeed"
	"go.uber.org/goleak"
)

// blackhole accepts connections and never answers, like a server that hangs
// or a network that drops everything after the handshake.
func blackhole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "postgres://postgres@" + l.Addr().String() + "/x?sslmode=disable"
}

// A hung database delays a writer by the publish timeout at most, and a
// writer that gives up earlier is released at once, even while another
// Publish holds the connection.
func TestPublishNeverBlocks(t *testing.T) {
	// First registered, so it runs after every other cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f := pgfeed.New(blackhole(t), pgfeed.WithLogger(quietLogger()), pgfeed.WithPublishTimeout(200*time.Millisecond))
	defer f.Close()

	first := make(chan error, 1)
	go func() { first <- f.Publish(context.Background(), []string{"a"}) }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := f.Publish(ctx, []string{"b"}); err == nil {
		t.Error("Publish to a hung server succeeded")
	}
	if d := time.Since(start); d > wait/2 {
		t.Errorf("Publish with a 20ms context took %v", d)
	}
	select {
	case err := <-first:
		if err == nil {
			t.Error("Publish to a hung server succeeded")
		}
	case <-time.After(wait):
		t.Fatal("Publish did not honour its timeout")
	}
	if f.Health().LastError == "" {
		t.Error("publish failure not in Health")
	}
}
