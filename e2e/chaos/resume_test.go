package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// heardBound bounds how long a change takes to be heard after a drop:
// go-sdk reopens a GET stream 1 to 2 s after it dropped.
const heardBound = 8 * time.Second

// TestResumeWithoutAnEventID drops a go-sdk client's GET stream silently
// (the server's side stays open, as behind a NAT or balancer that forgot
// the connection) and changes a customer it watches while the stream is
// down, twice: once before the session's GET streams carried any event,
// once after. The server writes the notification into the dead stream
// both times; go-sdk reopens the stream 1 to 2 s later, with the
// Last-Event-ID of the last event it read, or, when it read none on the
// session, with none. Both times the client must hear of the change.
//
// Every client that follows the transport's resumption is in the first
// case on every session until its GET stream carries an event: a new
// session, or one created again after a failure, whose first stream drops
// before the first change. The chaos test meets it after its quiet phase,
// when go-sdk has replaced a session that went quiet.
func TestResumeWithoutAnEventID(t *testing.T) {
	endpoint := example.StartHTTP(t)
	target, err := hostPort(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	writer, writerRT, err := direct(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		writer.Close()
		writerRT.CloseIdleConnections()
	}()
	p, err := startProxy(target, clientIP(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	log := newClientLog("go-sdk "+legacyEra, legacyEra, clientURIs(0), make(chan struct{}, 1))
	log.heard = make(chan string, 64)
	c := newSDKClient(log, legacyEra, "http://"+p.Addr()+"/mcp", true)
	clientCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { c.run(clientCtx) })
	defer func() {
		stop()
		running.Wait()
	}()
	select {
	case <-c.ready:
	case <-ctx.Done():
		t.Fatal("the client did not subscribe and read within a minute")
	}

	// dropAndChange cuts the client's connections silently, renames
	// customer id, and waits until the server has written into the dead
	// stream; then it waits for the client to hear of the change.
	dropAndChange := func(id int64, name string) error {
		before := p.dropped.Load()
		if n := p.cut(cutSilent); n == 0 {
			return fmt.Errorf("the client had no connection open to cut")
		}
		if err := rename(ctx, writer, change{id: id, name: name}); err != nil {
			return err
		}
		uri := loadkit.ShowURI(id)
		deadline := time.NewTimer(heardBound)
		defer deadline.Stop()
		for {
			select {
			case got := <-log.heard:
				if got == uri {
					return nil
				}
			case <-deadline.C:
				if p.dropped.Load() == before {
					return fmt.Errorf("%s was not heard within %v; the server wrote nothing into the dropped stream", uri, heardBound)
				}
				return fmt.Errorf("%s was not heard within %v after its change, which the server wrote into the GET stream the proxy had dropped (%d bytes went nowhere); the client's timeline:\n%s",
					uri, heardBound, p.dropped.Load()-before, log.timeline(time.Now().Add(-heardBound-time.Second), nil))
			}
		}
	}
	if err := dropAndChange(1, "Chaos 1.first"); err != nil {
		t.Errorf("before the session's GET stream carried an event: %v", err)
	}
	// An event the client reads, then the same drop.
	if err := rename(ctx, writer, change{id: 2, name: "Chaos 2.seen"}); err != nil {
		t.Fatal(err)
	}
	awaitHeard(t, log.heard, loadkit.ShowURI(2))
	if err := dropAndChange(3, "Chaos 3.after"); err != nil {
		t.Errorf("after the client read an event: %v", err)
	}
}

// awaitHeard waits until uri is heard, within heardBound.
func awaitHeard(t *testing.T, heard <-chan string, uri string) {
	t.Helper()
	deadline := time.NewTimer(heardBound)
	defer deadline.Stop()
	for {
		select {
		case got := <-heard:
			if got == uri {
				return
			}
		case <-deadline.C:
			t.Fatalf("%s was not heard within %v", uri, heardBound)
		}
	}
}
