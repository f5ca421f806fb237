package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// The live benchmarks: 10,000 subscriptions over 1,000 distinct argument
// sets (each subscribed from 10 sessions), on sessions of at most 64
// subscriptions, and one Changed that affects all 1,000 queries.

const (
	fanQueries = 1000
	fanSubs    = 10000
	fanPerConn = adapter.DefaultSubscriptionCap // 64
	orderRows  = 20
)

// The realistic command: one customer's orders, filtered (no cancelled
// ones), sorted (newest first) and totalled, from an in-memory table of 20
// rows per customer.

type order struct {
	ID       int    `json:"id"`
	Customer int    `json:"customer_id"`
	Status   string `json:"status"`
	Cents    int    `json:"amount_cents"`
	PlacedOn string `json:"placed_on"`
}

type ordersArgs struct {
	Customer int `json:"customer"`
}

type ordersPage struct {
	Customer   int     `json:"customer_id"`
	Count      int     `json:"count"`
	TotalCents int     `json:"total_cents"`
	Orders     []order `json:"orders"`
}

type orderStore struct {
	mu   sync.RWMutex
	rows map[int][]order // by customer, in insertion order
}

func newOrderStore() *orderStore {
	s := &orderStore{rows: make(map[int][]order, fanQueries)}
	statuses := []string{"open", "paid", "paid", "cancelled"}
	for c := 1; c <= fanQueries; c++ {
		rows := make([]order, orderRows)
		for i := range rows {
			rows[i] = order{
				ID: c*100 + i, Customer: c, Status: statuses[(c+i)%len(statuses)],
				Cents:    100 + (c*7+i*13)%5000,
				PlacedOn: fmt.Sprintf("2026-%02d-%02d", 1+(i*5+c)%12, 1+(i*11+c)%28),
			}
		}
		s.rows[c] = rows
	}
	return s
}

// ordersOf is the live command.
func (s *orderStore) ordersOf(ctx context.Context, args ordersArgs) (ordersPage, error) {
	adapter.Reads(ctx, "orders/"+strconv.Itoa(args.Customer))
	s.mu.RLock()
	rows := s.rows[args.Customer]
	page := ordersPage{Customer: args.Customer, Orders: make([]order, 0, len(rows))}
	for _, o := range rows {
		if o.Status != "cancelled" {
			page.Orders = append(page.Orders, o)
			page.TotalCents += o.Cents
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(page.Orders, func(a, b order) int {
		if c := strings.Compare(b.PlacedOn, a.PlacedOn); c != 0 {
			return c
		}
		return a.ID - b.ID
	})
	page.Count = len(page.Orders)
	return page, nil
}

// touchAll is a write that changes every customer's result: it raises the
// amount of each customer's first order that is not cancelled by one cent.
func (s *orderStore) touchAll() {
	s.mu.Lock()
	for _, rows := range s.rows {
		i := slices.IndexFunc(rows, func(o order) bool { return o.Status != "cancelled" })
		rows[i].Cents++
	}
	s.mu.Unlock()
}

// The trivial command: a struct built from the arguments and one shared
// counter, with a static read set.

type counterItem struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
}

type counterStore struct{ version atomic.Int64 }

func (s *counterStore) show(_ context.Context, args showArgs) (counterItem, error) {
	return counterItem{ID: args.ID, Name: "Ada Lovelace", Version: s.version.Load()}, nil
}

// The direct loops' results go here, so that the compiler keeps the work.
var (
	sinkPage ordersPage
	sinkItem counterItem
)

// fanout is a server with 10,000 subscriptions made by in-process mcp-go
// clients: every notification travels from the adapter through the
// session's channel and the client transport's forwarding goroutine to the
// client's notification handler, which counts it.
type fanout struct {
	a        *adapter.Adapter
	cmd      fanCmd
	clients  []*client.Client
	stops    []func()
	received atomic.Int64 // notifications/resources/updated at the clients
	target   atomic.Int64 // when received reaches it, reached gets a value
	reached  chan struct{}
	// listens are the listen streams, each with its session and URIs, for
	// BenchmarkFanoutFloor.
	listens []*listenStream
	// session is the session mcp-go registered last.
	session server.ClientSession
}

// listenStream is one client's subscriptions/listen stream as the server
// sees it.
type listenStream struct {
	session server.ClientSession
	uris    []string
	// meta is the _meta of its notifications (the subscription id), from
	// its acknowledgement.
	meta chan map[string]any
}

// liveCmd declares the command the live benchmarks subscribe to, named
// orders_of (template app://orders_of/{customer} or app://orders_of/{id}).
type liveCmd func(a *adapter.Adapter) fanCmd

// fanCmd is what a benchmark needs of the command it declared.
type fanCmd struct {
	// change is the key whose change re-runs every query.
	change string
	// write makes every result differ.
	write func()
	// direct runs the command for argument k (1 ≤ k ≤ 1,000) without the
	// adapter.
	direct func(ctx context.Context, k int) error
}

func realisticCmd(a *adapter.Adapter) fanCmd {
	st := newOrderStore()
	adapter.Live(a, "orders_of", "The open and paid orders of one customer, newest first.", st.ordersOf)
	return fanCmd{change: "orders", write: st.touchAll, direct: func(ctx context.Context, k int) error {
		page, err := st.ordersOf(ctx, ordersArgs{Customer: k})
		sinkPage = page
		return err
	}}
}

func trivialCmd(a *adapter.Adapter) fanCmd {
	st := &counterStore{}
	adapter.Live(a, "orders_of", "One item.", st.show, adapter.WithReads("items"))
	return fanCmd{change: "items", write: func() { st.version.Add(1) }, direct: func(ctx context.Context, k int) error {
		item, err := st.show(ctx, showArgs{ID: int64(k)})
		sinkItem = item
		return err
	}}
}

// newFanout subscribes subscription k (0 ≤ k < 10,000) to argument
// k%1000+1 on session k/64: 157 sessions, each argument set subscribed from
// 10 of them.
func newFanout(b *testing.B, cmd liveCmd) *fanout {
	b.Helper()
	srv := server.NewMCPServer("bench", "1")
	f := &fanout{a: adapter.Wrap(srv), reached: make(chan struct{}, 1)}
	srv.GetHooks().AddOnRegisterSession(func(_ context.Context, s server.ClientSession) { f.session = s })
	f.cmd = cmd(f.a)
	f.target.Store(-1)
	b.Cleanup(f.close)

	var uris []string
	for k := range fanSubs {
		uris = append(uris, "app://orders_of/"+strconv.Itoa(k%fanQueries+1))
		if len(uris) == fanPerConn || k == fanSubs-1 {
			f.listen(b, srv, uris)
			uris = nil
		}
	}
	f.waitSubscribed(b, fanSubs)
	if st := f.a.LiveStats(); st.Queries != fanQueries {
		b.Fatalf("%d queries, want %d", st.Queries, fanQueries)
	}
	return f
}

// listen connects one in-process client and opens its listen stream.
func (f *fanout) listen(b *testing.B, srv *server.MCPServer, uris []string) {
	c := connect(b, srv) // registers its session: f.session
	f.clients = append(f.clients, c)
	ls := &listenStream{session: f.session, uris: uris, meta: make(chan map[string]any, 1)}
	f.listens = append(f.listens, ls)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			ls.meta <- n.Params.Meta
		case string(mcp.MethodNotificationResourceUpdated):
			if f.received.Add(1) == f.target.Load() {
				f.reached <- struct{}{}
			}
		}
	})
	stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: uris},
		func(err error) { b.Error("listen:", err) })
	if err != nil {
		b.Fatal(err)
	}
	f.stops = append(f.stops, stop)
}

func (f *fanout) waitSubscribed(b *testing.B, n int) {
	deadline := time.Now().Add(time.Minute)
	for f.a.LiveStats().Subscriptions < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d subscriptions after a minute, want %d", f.a.LiveStats().Subscriptions, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// close ends the listen streams and the clients, and waits for the
// registry to let go of them.
func (f *fanout) close() {
	for _, stop := range f.stops {
		stop()
	}
	for _, c := range f.clients {
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = f.a.WaitIdle(ctx)
}

// change reports the command's change and waits until want more
// notifications reached the clients and the registry is idle.
func (f *fanout) change(b *testing.B, want int64) {
	f.expect(want)
	f.a.Changed(f.cmd.change)
	f.wait(b, want)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.a.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
}

// expect arms wait for want more notifications.
func (f *fanout) expect(want int64) {
	if want > 0 {
		f.target.Store(f.received.Load() + want)
	}
}

// wait waits until the notifications expect armed it for reached the
// clients.
func (f *fanout) wait(b *testing.B, want int64) {
	if want == 0 {
		return
	}
	select {
	case <-f.reached:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d notifications after a minute", f.received.Load()-(f.target.Load()-want), want)
	}
}

func benchFanout(b *testing.B, cmd liveCmd) {
	f := newFanout(b, cmd)
	before := f.a.LiveStats()
	received := f.received.Load()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		b.StopTimer()
		f.cmd.write()
		b.StartTimer()
		f.change(b, fanSubs)
	}
	b.StopTimer()
	cpu.report(loops)
	after := f.a.LiveStats()
	reruns := after.Reruns - before.Reruns
	if reruns != uint64(loops*fanQueries) {
		b.Fatalf("%d re-runs in %d changes, want %d each", reruns, loops, fanQueries)
	}
	if got := f.received.Load() - received; got != int64(loops*fanSubs) {
		b.Fatalf("%d notifications in %d changes, want %d each", got, loops, fanSubs)
	}
	b.ReportMetric(float64(reruns)/float64(loops), "reruns/op")

	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanSubs), "ns/notification")
}

// BenchmarkFanout: one Changed re-runs the 1,000 queries behind 10,000
// subscriptions, each result differs, and the op ends when all 10,000
// notifications reached the clients' handlers.
func BenchmarkFanout(b *testing.B) { benchFanout(b, realisticCmd) }

// BenchmarkFanoutTrivial is BenchmarkFanout with a command that does
// almost nothing, so that the adapter's own cost shows.
func BenchmarkFanoutTrivial(b *testing.B) { benchFanout(b, trivialCmd) }

// BenchmarkFanoutDirect: the same 1,000 command executions, called directly
// in a loop: the physical limit of a fan-out.
func BenchmarkFanoutDirect(b *testing.B) {
	st := newOrderStore()
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		for c := 1; c <= fanQueries; c++ {
			page, err := st.ordersOf(ctx, ordersArgs{Customer: c})
			if err != nil {
				b.Fatal(err)
			}
			sinkPage = page
		}
	}
	cpu.report(loops)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanQueries), "ns/exec")
}

// BenchmarkFanoutFloor is what a fan-out costs without a registry: the
// same 1,000 command executions, then the same 10,000 notifications handed
// to the same in-process sessions through mcp-go (into each session's
// channel, as mcp-go's own sends do, but waiting where mcp-go would drop),
// each session's in one burst, and the op ends, as Fanout's does, when all
// of them reached the clients' handlers. It knows in advance that every
// result changed and who subscribed to what, so it keeps no state, compares
// nothing and starts no goroutine: the least any registry can do.
func BenchmarkFanoutFloor(b *testing.B) { benchFanoutFloor(b, realisticCmd) }

// BenchmarkFanoutFloorTrivial is BenchmarkFanoutFloor for the trivial
// command.
func BenchmarkFanoutFloorTrivial(b *testing.B) { benchFanoutFloor(b, trivialCmd) }

func benchFanoutFloor(b *testing.B, cmd liveCmd) {
	f := newFanout(b, cmd)
	// The notifications, built once, as the registry keeps them: the
	// params of each subscription's, and the _meta of each stream's.
	bursts := make([][]mcp.JSONRPCNotification, len(f.listens))
	for i, ls := range f.listens {
		meta := <-ls.meta
		for _, uri := range ls.uris {
			n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION}
			n.Method = string(mcp.MethodNotificationResourceUpdated)
			n.Params = mcp.NotificationParams{Meta: meta, AdditionalFields: map[string]any{"uri": uri}}
			bursts[i] = append(bursts[i], n)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		b.StopTimer()
		f.cmd.write()
		f.expect(fanSubs)
		b.StartTimer()
		for k := 1; k <= fanQueries; k++ {
			if err := f.cmd.direct(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
		for i, ls := range f.listens {
			ch := ls.session.NotificationChannel()
			for _, n := range bursts[i] {
				ch <- n
			}
		}
		f.wait(b, fanSubs)
	}
	cpu.report(loops)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanSubs), "ns/notification")
}

// BenchmarkFanoutDirectTrivial is BenchmarkFanoutDirect for the trivial
// command.
func BenchmarkFanoutDirectTrivial(b *testing.B) {
	st := &counterStore{}
	ctx := context.Background()
	b.ReportAllocs()
	loops := 0
	for b.Loop() {
		loops++
		for c := 1; c <= fanQueries; c++ {
			item, err := st.show(ctx, showArgs{ID: int64(c)})
			if err != nil {
				b.Fatal(err)
			}
			sinkItem = item
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanQueries), "ns/exec")
}

// BenchmarkNoChange: a Changed that re-runs the 1,000 queries behind 10,000
// subscriptions, none of whose results changed, so no one is notified. The
// op ends when the registry is idle again.
func BenchmarkNoChange(b *testing.B) {
	f := newFanout(b, realisticCmd)
	before := f.a.LiveStats()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	loops := 0
	for b.Loop() {
		loops++
		f.change(b, 0)
	}
	b.StopTimer()
	cpu.report(loops)
	after := f.a.LiveStats()
	if reruns := after.Reruns - before.Reruns; reruns != uint64(loops*fanQueries) {
		b.Fatalf("%d re-runs in %d changes, want %d each", reruns, loops, fanQueries)
	}
	// Notifications already on their way would still arrive: give them a
	// moment, then count.
	time.Sleep(10 * time.Millisecond)
	notes := after.Notified - before.Notified
	if got := f.received.Load(); notes != 0 || got != 0 {
		b.Fatalf("%d notifications sent, %d received, want 0", notes, got)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*fanSubs), "ns/sub")
	b.ReportMetric(float64(notes)/float64(loops), "notifications/op")
}

// idleWindow is how long one op of BenchmarkIdle watches the process.
const idleWindow = 2 * time.Second

// BenchmarkIdle: the Fanout setup, 10,000 subscriptions over 1,000 queries
// on 157 in-process clients, with nothing written. It reports the CPU time
// the whole process spends per second of wall time (cpu-ms/s, from
// getrusage) while it holds them: what subscriptions cost while nothing
// changes. Each op is a window of 2 seconds.
func BenchmarkIdle(b *testing.B) {
	f := newFanout(b, realisticCmd)
	// Let the setup's garbage and goroutines settle first.
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	before := f.a.LiveStats()
	b.ResetTimer()
	cpu := processCPU(b)
	for b.Loop() {
		time.Sleep(idleWindow)
	}
	used := processCPU(b) - cpu
	b.StopTimer()
	if after := f.a.LiveStats(); after.Reruns != before.Reruns || after.Subscriptions != fanSubs {
		b.Fatalf("while idle: %+v, before %+v", after, before)
	}
	b.ReportMetric(float64(used)/float64(time.Millisecond)/b.Elapsed().Seconds(), "cpu-ms/s")
}

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
	var m memResult
	for b.Loop() {
		m = subscriptionMemory(b, listen)
	}
	b.ReportMetric(m.notified, "bytes/sub")
	b.ReportMetric(m.fresh, "bytes/sub-unnotified")
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

func newMemServer(b *testing.B) *memServer {
	m := &memServer{srv: server.NewMCPServer("bench", "1"), st: &counterStore{}}
	m.a = adapter.Wrap(m.srv)
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

func subscriptionMemory(b *testing.B, listen bool) memResult {
	b.StopTimer()
	m := newMemServer(b)
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
	if n := m.a.LiveStats().Notified; n != memSubs {
		b.Fatalf("%d notified, want %d", n, memSubs)
	}
	runtime.KeepAlive(msgs)

	m.close()
	if st := m.a.LiveStats(); st.Subscriptions != 0 || st.Sessions != 0 || st.Queries != 0 {
		b.Fatalf("after the sessions ended: %+v", st)
	}
	b.StartTimer()
	return memResult{fresh: fresh, notified: notified, subscribeNs: subscribeNs}
}
