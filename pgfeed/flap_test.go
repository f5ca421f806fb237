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

// flapping is a server that accepts each connection, lets it LISTEN, and
// then drops it: a database that keeps failing right after it comes back
// (a crash loop, a proxy that cuts every connection). It sends the time of
// each connection attempt on accepted.
func flapping(t *testing.T, accepted chan<- time.Time) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				b := pgproto3.NewBackend(c, c)
				m, err := b.ReceiveStartupMessage()
				if err != nil {
					return
				}
				if _, ok := m.(*pgproto3.StartupMessage); !ok {
					return // the CancelRequest pgx sends as it drops a lost connection
				}
				select {
				case accepted <- time.Now():
				default:
				}
				b.Send(&pgproto3.AuthenticationOk{})
				b.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
				b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				if b.Flush() != nil {
					return
				}
				if _, err := b.Receive(); err != nil { // LISTEN
					return
				}
				b.Send(&pgproto3.CommandComplete{CommandTag: []byte("LISTEN")})
				b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				b.Flush()
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return "postgres://postgres@" + l.Addr().String() + "/x?sslmode=disable"
}

// A connection that is lost right after it was made does not reset the
// backoff: against a server that drops every connection at once, the
// delays between attempts still grow, rather than Run reconnecting (and
// re-running every live query) every backoffMin forever.
func TestBackoffGrowsWhenConnectionsDropAtOnce(t *testing.T) {
	// First registered, so it runs after every other cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const minDelay = 10 * time.Millisecond
	accepted := make(chan time.Time, 64)
	f := pgfeed.New(flapping(t, accepted), pgfeed.WithLogger(quietLogger()), pgfeed.WithBackoff(minDelay, time.Hour))
	f.Attach(newSink())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(wait):
			t.Error("Run did not return")
		}
	}()

	// Attempt n (from 0) waits at least minDelay·2ⁿ/2 after the loss of
	// connection n, so connection n+1 comes that long after connection n.
	// The sum is checked rather than each gap: the accepting goroutine
	// may be scheduled late for one connection and early for the next.
	const attempts = 6
	var first, last time.Time
	for n := 0; n <= attempts; n++ {
		select {
		case last = <-accepted:
			if n == 0 {
				first = last
			}
		case <-time.After(wait):
			t.Fatalf("%d connections within %v, want %d", n, wait, attempts+1)
		}
	}
	least := minDelay / 2 * (1<<attempts - 1)
	if took := last.Sub(first); took < least {
		t.Errorf("%d connections dropped at once were retried within %v, want backoff of at least %v", attempts, took, least)
	}
}
