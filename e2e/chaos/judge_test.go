package chaos

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// TestStale checks the judge: a subscription is stale unless its last
// notification is followed by a read, started after it, that shows the
// final name.
func TestStale(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	uri := loadkit.ShowURI(1)
	final := map[string]string{uri: "new"}
	tests := []struct {
		name          string
		notes         []int
		reads         []read
		stale, behind int
		says          string
	}{
		{"notified, then read the final name", []int{10}, []read{{uri: uri, start: at(11), name: "new"}}, 0, 0, ""},
		{"never notified", nil, []read{{uri: uri, start: at(11), name: "new"}}, 1, 0, "never notified"},
		{"read the final name before the notification only", []int{10}, []read{{uri: uri, start: at(9), name: "new"}}, 1, 1, "not read since"},
		{"read an old name after it", []int{10}, []read{{uri: uri, start: at(11), name: "old"}}, 1, 0, `read since "old"`},
		{"the last read after it counts", []int{10}, []read{{uri: uri, start: at(12), name: "old"}, {uri: uri, start: at(11), name: "new"}}, 1, 0, `read since "old"`},
		{"notified again after the final read", []int{10, 20}, []read{{uri: uri, start: at(11), name: "new"}}, 1, 1, "not read since"},
		{"a read of another URI does not count", []int{10}, []read{{uri: loadkit.ShowURI(2), start: at(11), name: "new"}}, 1, 1, "not read since"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newClientLog("c", "k", []string{uri}, make(chan struct{}, 1))
			for _, ms := range tt.notes {
				l.noted(uri, at(ms))
			}
			for _, r := range tt.reads {
				l.readDone(r)
			}
			stale, behind, ex := l.stale(final)
			if stale != tt.stale || behind != tt.behind || stale != len(ex) || tt.says != "" && !strings.Contains(strings.Join(ex, "\n"), tt.says) {
				t.Errorf("stale = %d, %d, %q; want %d stale, %d behind, saying %q", stale, behind, ex, tt.stale, tt.behind, tt.says)
			}
		})
	}
}

// TestTally checks the figures of one client: latency from the oldest
// write a notification answers, replays after a reopened stream,
// notifications that answer nothing new, and reconnects.
func TestTally(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	uri := loadkit.ShowURI(1)
	writes := loadkit.NewWriteLog()
	for _, ms := range []int{0, 100, 300} {
		writes.Started(1, at(ms))
	}
	l := newClientLog("c", "k", []string{uri, loadkit.ShowURI(2)}, make(chan struct{}, 1))
	l.opened(openFirst, at(-10), nil)
	l.noted(uri, at(50))                                          // answers the write at 0: live, 50 ms
	l.opened(openResume, at(150), nil)                            // the write at 100 went unheard
	l.noted(uri, at(160))                                         // answers it: a replay, 60 ms
	l.noted(uri, at(170))                                         // answers nothing new
	l.opened(openRelisten, at(305), []string{loadkit.ShowURI(2)}) // of another URI
	l.noted(uri, at(310))                                         // answers the write at 300, live
	l.opened(openAfresh, at(400), nil)
	l.count(&l.restored)
	got := l.tally(writes, at(165), at(200))
	want := []time.Duration{50 * time.Millisecond, 60 * time.Millisecond, 10 * time.Millisecond}
	if len(got.latencies) != len(want) || got.latencies[0] != want[0] || got.latencies[1] != want[1] || got.latencies[2] != want[2] {
		t.Errorf("latencies %v, want %v", got.latencies, want)
	}
	if got.replays != 1 || got.extra != 1 || got.quiet != 1 || got.notifications != 4 {
		t.Errorf("replays %d, extra %d, quiet %d, notifications %d; want 1, 1, 1, 4", got.replays, got.extra, got.quiet, got.notifications)
	}
	if got.reconnects != 3 || got.resumes != 1 || got.relistens != 1 || got.afresh != 1 || got.restored != 1 {
		t.Errorf("reconnects %d (resumes %d, re-listens %d, afresh %d), restored %d; want 3 (1, 1, 1), 1",
			got.reconnects, got.resumes, got.relistens, got.afresh, got.restored)
	}
}

// TestProxyCuts checks the proxy: it carries bytes both ways; a reset
// cut resets the client's connection, a clean one ends it, and a silent
// one resets the client's while the server's stays open until the proxy
// closes.
func TestProxyCuts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			served <- c
		}
	}()
	p, err := startProxy(ln.Addr().String(), clientIP(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	for _, tt := range []struct {
		how  cut
		want func(error) bool
	}{
		{cutReset, func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }},
		{cutClose, func(err error) bool { return err == io.EOF }},
		{cutSilent, func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }},
	} {
		t.Run(tt.how.String(), func(t *testing.T) {
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var s net.Conn
			select {
			case s = <-served:
			case <-time.After(5 * time.Second):
				t.Fatal("the proxy did not connect to the server within 5 s")
			}
			defer s.Close()
			if host, _, _ := net.SplitHostPort(s.RemoteAddr().String()); host != clientIP(0).String() {
				t.Errorf("the server sees the client at %s, want %s", host, clientIP(0))
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			s.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 5)
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "hello" {
				t.Fatalf("the server read %q, %v; want hello", buf, err)
			}
			if _, err := s.Write([]byte("world")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "world" {
				t.Fatalf("the client read %q, %v; want world", buf, err)
			}
			if n := p.live(); n != 1 {
				t.Fatalf("live() = %d, want 1", n)
			}
			if n := p.cut(tt.how); n != 1 {
				t.Fatalf("cut(%v) = %d, want 1", tt.how, n)
			}
			if _, err := c.Read(buf); !tt.want(err) {
				t.Errorf("after a %v cut the client reads %v", tt.how, err)
			}
			if n := p.live(); n != 0 {
				t.Errorf("after the cut live() = %d, want 0", n)
			}
			if tt.how != cutSilent {
				if _, err := s.Read(buf); err == nil {
					t.Errorf("after a %v cut the server's side is still open", tt.how)
				}
				return
			}
			// Silent: the server writes on into the void, and its side
			// stays open.
			if _, err := s.Write([]byte("lost!")); err != nil {
				t.Errorf("after a silent cut the server cannot write: %v", err)
			}
			s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := s.Read(buf); !isTimeout(err) {
				t.Errorf("after a silent cut the server's side reads %v, want it open (a timeout)", err)
			}
		})
	}
	if got := p.accepted.Load(); got != 3 {
		t.Errorf("accepted %d connections, want 3", got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
