package pgfeed_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
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

// A Publish that gives up on a server that stopped answering leaves pgx
// closing the connection in a goroutine of its own, which waits up to 15 s
// for the server. Close ends it: no goroutine of the feed outlives Close.
func TestCloseEndsWhatPublishDropped(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.(*net.TCPListener).SetDeadline(time.Now().Add(wait))
	accept := func() net.Conn {
		t.Helper()
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	f := pgfeed.New("postgres://postgres@"+l.Addr().String()+"/x?sslmode=disable",
		pgfeed.WithLogger(quietLogger()), pgfeed.WithPublishTimeout(200*time.Millisecond))
	published := make(chan error, 1)
	go func() { published <- f.Publish(context.Background(), []string{"a"}) }()

	// The handshake, then silence: the server hangs, or the network cut
	// the connection without a word.
	c := accept()
	defer c.Close()
	b := pgproto3.NewBackend(c, c)
	if _, err := b.ReceiveStartupMessage(); err != nil {
		t.Fatal(err)
	}
	b.Send(&pgproto3.AuthenticationOk{})
	b.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-published:
		if err == nil {
			t.Fatal("Publish to a silent server succeeded")
		}
	case <-time.After(wait):
		t.Fatal("Publish did not honour its timeout")
	}
	// pgx's cleanup begins with a CancelRequest on a connection of its
	// own, answered by closing it; then it waits on the silent one.
	accept().Close()

	f.Close()
	goleak.VerifyNone(t)
}
