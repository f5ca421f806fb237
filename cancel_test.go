package adapter

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// TestStdioCancelledListenIsNotAnswered: a subscriptions/listen that its
// client cancels ends, with its subscriptions, and no answer follows the
// cancel: the protocol says a server SHOULD NOT respond to a cancelled
// request. Another listen, not cancelled, is answered when it ends.
func TestStdioCancelledListenIsNotAnswered(t *testing.T) {
	st := newItemStore(2)
	a := newLiveServer(t, st)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		err := a.ServeStdio(ctx, inR, outW)
		outW.Close()
		done <- err
	}()
	// Every line the server writes goes to lines, and its ID, when it
	// answers, to answered, which is read once the server has returned.
	lines := make(chan []byte, 64)
	answered := make(chan []string, 1)
	go func() {
		defer close(lines)
		var ids []string
		defer func() { answered <- ids }()
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &m) == nil && m.Method == "" {
				ids = append(ids, string(m.ID))
			}
			lines <- line
		}
	}()
	defer func() {
		stop()
		inW.Close()
		for range lines {
		}
		if err := <-done; err != nil && err != context.Canceled {
			t.Errorf("ServeStdio: %v", err)
		}
		// ServeStdio writes nothing once it has returned: every answer
		// it wrote is in.
		for _, id := range <-answered {
			if id == "1" {
				t.Error("the cancelled listen was answered")
			}
		}
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next reads output lines until one with id, and returns the others'
	// ids and methods.
	next := func(id string) (before []string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the output ended before the answer to %s", id)
				}
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if err := json.Unmarshal(line, &m); err != nil {
					t.Fatalf("output %q: %v", line, err)
				}
				if m.Method == "" && string(m.ID) == id {
					return before
				}
				before = append(before, string(m.ID)+m.Method)
			case <-timeout:
				t.Fatalf("no answer to %s within 10 s", id)
			}
		}
	}
	ack := func() {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case line := <-lines:
				var m struct{ Method string }
				_ = json.Unmarshal(line, &m)
				if m.Method == "notifications/subscriptions/acknowledged" {
					return
				}
			case <-timeout:
				t.Fatal("no acknowledgement within 10 s")
			}
		}
	}

	send(listenBody(1, "app://items_show/1"))
	ack()
	send(listenBody(2, "app://items_show/2"))
	ack()
	send(cancelBody(1))
	waitSubscriptions(t, a, 1)
	send(`{"jsonrpc":"2.0","id":"fence","method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	next(`"fence"`)
	send(cancelBody(1)) // again: it is gone, and nothing else is touched
	send(`{"jsonrpc":"2.0","id":"fence2","method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	next(`"fence2"`)
	if s := a.LiveStats(); s.Subscriptions != 1 {
		t.Errorf("%d subscriptions after the second cancel of listen 1, want listen 2's", s.Subscriptions)
	}
	// Close ends listen 2 with its result: a listen ended by the server
	// is answered.
	closed := make(chan error, 1)
	go func() { closed <- a.Close(context.Background()) }()
	next("2")
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// waitSubscriptions waits, at most 10 s, until a holds n subscriptions.
func waitSubscriptions(t *testing.T, a *Adapter, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.live.waitFor(ctx, func() bool { return a.live.subs == n }); err != nil {
		t.Fatalf("%d subscriptions, want %d: %v", a.LiveStats().Subscriptions, n, err)
	}
}
