package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// memSession is the least a session of mcp-go is: a registered
// server.ClientSession with a notification channel, which a goroutine
// drains, as a transport would.
type memSession struct {
	id   string
	ch   chan mcp.JSONRPCNotification
	done chan struct{}
}

func (s *memSession) SessionID() string                                   { return s.id }
func (s *memSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.ch }
func (s *memSession) Initialize()                                         {}
func (s *memSession) Initialized() bool                                   { return true }

var _ server.ClientSession = (*memSession)(nil)

func heapAlloc() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

const memSubs = 100000

// BenchmarkSubscriptionMemory: the heap the adapter holds per subscription,
// with 100,000 subscriptions made with resources/subscribe on 1,563
// sessions, every one with arguments of its own (no query is shared: the
// worst case), after one notification each (bytes/sub) and before any
// (bytes/sub-unnotified).
//
// How it is counted: the heap (after two GCs) once the sessions are
// registered and the requests built, then again with the 100,000
// subscriptions held. mcp-go keeps nothing of a resources/subscribe request
// once it has answered, so the difference is the adapter's, except each
// subscription's URI string, which the difference includes and which is
// subtracted at its length (len(uri) bytes; what the allocator rounds it up
// to is counted as the adapter's).
//
// Kept results (adapter.WithKeptResults) are counted apart: bytes/sub and
// bytes/sub-unnotified are measured with them off, the registry's own;
// bytes/sub-kept again with them on, after the notification, when every
// query keeps its result (here a JSON text of about 60 bytes).
func BenchmarkSubscriptionMemory(b *testing.B) { benchMemory(b, false) }

// BenchmarkSubscriptionMemoryListen is BenchmarkSubscriptionMemory with the
// subscriptions made by subscriptions/listen (protocol 2026-07-28), 64 URIs
// a request, the requests held open. An open listen request keeps mcp-go's
// own state (the parsed request, its URIs, its context); a control run that
// opens the same requests with URIs of another scheme, of the same length,
// which the adapter leaves alone, measures it, and it is subtracted, URI
// strings included.
func BenchmarkSubscriptionMemoryListen(b *testing.B) { benchMemory(b, true) }

func benchMemory(b *testing.B, listen bool) {
	var m, kept memResult
	for b.Loop() {
		m = subscriptionMemory(b, listen, false)
		kept = subscriptionMemory(b, listen, true)
	}
	b.ReportMetric(m.notified, "bytes/sub")
	b.ReportMetric(m.fresh, "bytes/sub-unnotified")
	b.ReportMetric(kept.notified, "bytes/sub-kept")
	b.ReportMetric(m.subscribeNs, "ns/subscribe")
}

type memResult struct{ fresh, notified, subscribeNs float64 }

// memServer is a server with a live command and sessions of memSession.
type memServer struct {
	srv      *server.MCPServer
	a        *adapter.Adapter
	st       *counterStore
	sessions []*memSession
	drainers sync.WaitGroup
	acks     atomic.Int64 // notifications/subscriptions/acknowledged
	updates  atomic.Int64 // notifications/resources/updated
	// listens are the open subscriptions/listen requests.
	listens   sync.WaitGroup
	cancel    []context.CancelFunc
	closeOnce sync.Once
}

// newMemServer makes the server; kept says whether its live queries keep
// their results.
func newMemServer(b *testing.B, kept bool) *memServer {
	m := &memServer{srv: server.NewMCPServer("bench", "1"), st: &counterStore{}}
	var opts []adapter.Option
	if !kept {
		opts = append(opts, adapter.WithKeptResults(0, 0))
	}
	m.a = adapter.Wrap(m.srv, opts...)
	adapter.Live(m.a, "orders_of", "One item.", m.st.show, adapter.WithReads("items"))
	m.sessions = make([]*memSession, (memSubs+fanPerConn-1)/fanPerConn)
	for i := range m.sessions {
		s := &memSession{id: "mem-" + strconv.Itoa(i), ch: make(chan mcp.JSONRPCNotification, 100), done: make(chan struct{})}
		m.sessions[i] = s
		if err := m.srv.RegisterSession(context.Background(), s); err != nil {
			b.Fatal(err)
		}
		m.drainers.Go(func() {
			for {
				select {
				case n := <-s.ch:
					switch n.Method {
					case string(mcp.MethodNotificationResourceUpdated):
						m.updates.Add(1)
					case mcp.MethodNotificationSubscriptionsAcknowledged:
						m.acks.Add(1)
					}
				case <-s.done:
					return
				}
			}
		})
	}
	return m
}

// messages are the requests that subscribe subscription k to
// scheme://orders_of/k+1: one resources/subscribe each, or one
// subscriptions/listen for each session's 64.
func (m *memServer) messages(scheme string, listen bool) (msgs [][]byte, uriBytes int) {
	uri := func(k int) string { return scheme + "://orders_of/" + strconv.Itoa(k+1) }
	if !listen {
		msgs = make([][]byte, memSubs)
		for k := range msgs {
			uriBytes += len(uri(k))
			msgs[k] = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, k+1, uri(k))
		}
		return msgs, uriBytes
	}
	msgs = make([][]byte, len(m.sessions))
	for i := range msgs {
		var uris []string
		for k := i * fanPerConn; k < min((i+1)*fanPerConn, memSubs); k++ {
			uris = append(uris, uri(k))
			uriBytes += len(uri(k))
		}
		list, _ := json.Marshal(uris)
		msgs[i] = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":%s},`+
			`"_meta":{%q:%q,%q:{},%q:{"name":"bench","version":"1"}}}}`,
			i+1, list, mcp.MetaKeyProtocolVersion, mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo)
	}
	return msgs, uriBytes
}

// send handles msgs, msgs[i] on the session of request i (resources/subscribe:
// of subscription i), each listen request on a goroutine of its own, held
// open until closeListens.
func (m *memServer) send(b *testing.B, msgs [][]byte, listen bool) {
	for i, msg := range msgs {
		s := m.sessions[i/fanPerConn]
		if listen {
			s = m.sessions[i]
		}
		ctx, cancel := context.WithCancel(m.srv.WithContext(context.Background(), s))
		if !listen {
			resp := m.srv.HandleMessage(ctx, msg)
			cancel()
			if _, ok := resp.(mcp.JSONRPCResponse); !ok {
				b.Fatalf("subscribe: %+v", resp)
			}
			continue
		}
		m.cancel = append(m.cancel, cancel)
		m.listens.Go(func() { m.srv.HandleMessage(ctx, msg) })
	}
	if listen {
		deadline := time.Now().Add(time.Minute)
		for m.acks.Load() < int64(len(msgs)) {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d listen requests acknowledged", m.acks.Load(), len(msgs))
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func (m *memServer) closeListens() {
	for _, cancel := range m.cancel {
		cancel()
	}
	m.cancel = nil
	m.listens.Wait()
}

func (m *memServer) close() {
	m.closeOnce.Do(func() {
		m.closeListens()
		for _, s := range m.sessions {
			m.srv.UnregisterSession(context.Background(), s.id)
			close(s.done)
		}
		m.drainers.Wait()
	})
}

func subscriptionMemory(b *testing.B, listen, kept bool) memResult {
	b.StopTimer()
	m := newMemServer(b, kept)
	defer m.close()

	// mcp-go's share: the same requests for URIs the adapter does not own.
	var mcpgo int64
	if listen {
		msgs, _ := m.messages("xyz", true)
		base := heapAlloc()
		m.send(b, msgs, true)
		mcpgo = heapAlloc() - base
		runtime.KeepAlive(msgs)
		m.closeListens()
		m.acks.Store(0)
		if st := m.a.LiveStats(); st.Subscriptions != 0 {
			b.Fatalf("the control subscribed: %+v", st)
		}
	}

	msgs, uriBytes := m.messages("app", listen)
	if listen {
		// The URI strings are mcp-go's parse of the request, shared with
		// the adapter, and in the control run's share already.
		uriBytes = 0
	}
	base := heapAlloc()
	b.StartTimer()
	start := time.Now()
	m.send(b, msgs, listen)
	for m.a.LiveStats().Subscriptions < memSubs {
		time.Sleep(time.Millisecond)
	}
	subscribeNs := float64(time.Since(start).Nanoseconds()) / memSubs
	b.StopTimer()
	if !listen {
		clear(msgs) // the requests are no one's once answered
	}
	held := heapAlloc() - base - int64(uriBytes) - mcpgo
	fresh := float64(held) / memSubs

	m.st.version.Add(1)
	m.a.Changed("items")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.a.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
	held = heapAlloc() - base - int64(uriBytes) - mcpgo
	notified := float64(held) / memSubs
	if st := m.a.LiveStats(); st.Notified != memSubs || kept != (st.Kept == memSubs) {
		b.Fatalf("%+v: want %d notified, and with kept results %v as many kept", st, memSubs, kept)
	}
	runtime.KeepAlive(msgs)

	m.close()
	if st := m.a.LiveStats(); st.Subscriptions != 0 || st.Sessions != 0 || st.Queries != 0 {
		b.Fatalf("after the sessions ended: %+v", st)
	}
	b.StartTimer()
	return memResult{fresh: fresh, notified: notified, subscribeNs: subscribeNs}
}
