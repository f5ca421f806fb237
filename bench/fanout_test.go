package bench

import (
	"context"
	"fmt"
	"runtime/debug"
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

func newOrderStore(customers int) *orderStore {
	s := &orderStore{rows: make(map[int][]order, customers)}
	statuses := []string{"open", "paid", "paid", "cancelled"}
	for c := 1; c <= customers; c++ {
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
		touch(rows)
	}
	s.mu.Unlock()
}

// touchOne is touchAll for one customer.
func (s *orderStore) touchOne(customer int) {
	s.mu.Lock()
	touch(s.rows[customer])
	s.mu.Unlock()
}

func touch(rows []order) {
	i := slices.IndexFunc(rows, func(o order) bool { return o.Status != "cancelled" })
	rows[i].Cents++
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
//
// Each client counts on its own and adds its count to received when its
// session's channel is empty, a burst at a time: one counter that every
// notification of every client incremented moved between the cores with
// every notification, a cost of the benchmark's own. It weighed on
// FanoutFloor more than on Fanout: there the clients' goroutines run on
// the other core while the floor's loop sends.
type fanout struct {
	queries  int // distinct argument sets
	subs     int // subscriptions
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
	// writer, when not nil, is the context the change is reported with
	// (ChangedContext), as a traced write would.
	writer context.Context
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
// Its argument ranges from 1 to queries.
type liveCmd func(a *adapter.Adapter, queries int) fanCmd

// fanCmd is what a benchmark needs of the command it declared.
type fanCmd struct {
	// change is the key whose change re-runs every query.
	change string
	// write makes every result differ; writeOne, the result for argument
	// k, which it returns the key of.
	write    func()
	writeOne func(k int) string
	// direct runs the command for argument k (1 ≤ k ≤ 1,000) without the
	// adapter.
	direct func(ctx context.Context, k int) error
}

func realisticCmd(a *adapter.Adapter, queries int) fanCmd { return realisticWith(a, queries) }

// realisticWith declares the realistic command with opts.
func realisticWith(a *adapter.Adapter, queries int, opts ...adapter.CommandOption) fanCmd {
	st := newOrderStore(queries)
	adapter.Live(a, "orders_of", "The open and paid orders of one customer, newest first.", st.ordersOf, opts...)
	return fanCmd{
		change: "orders",
		write:  st.touchAll,
		writeOne: func(k int) string {
			st.touchOne(k)
			return "orders/" + strconv.Itoa(k)
		},
		direct: func(ctx context.Context, k int) error {
			page, err := st.ordersOf(ctx, ordersArgs{Customer: k})
			sinkPage = page
			return err
		},
	}
}

// pacedCmd is realisticCmd paced to one notification a second
// (WithNotifyInterval).
func pacedCmd(a *adapter.Adapter, queries int) fanCmd {
	return realisticWith(a, queries, adapter.WithNotifyInterval(time.Second))
}

func trivialCmd(a *adapter.Adapter, _ int) fanCmd {
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
func newFanout(b *testing.B, cmd liveCmd, opts ...adapter.Option) *fanout {
	return newFanoutSized(b, cmd, fanQueries, fanSubs, opts...)
}

// newFanoutSized is newFanout with subs subscriptions over queries
// argument sets; opts are the adapter's.
func newFanoutSized(b *testing.B, cmd liveCmd, queries, subs int, opts ...adapter.Option) *fanout {
	b.Helper()
	srv := server.NewMCPServer("bench", "1")
	f := &fanout{queries: queries, subs: subs, a: adapter.Wrap(srv, opts...), reached: make(chan struct{}, 1)}
	srv.GetHooks().AddOnRegisterSession(func(_ context.Context, s server.ClientSession) { f.session = s })
	f.cmd = cmd(f.a, queries)
	f.target.Store(-1)
	b.Cleanup(f.close)

	var uris []string
	for k := range subs {
		uris = append(uris, "app://orders_of/"+strconv.Itoa(k%queries+1))
		if len(uris) == fanPerConn || k == subs-1 {
			f.listen(b, srv, uris)
			uris = nil
		}
	}
	f.waitSubscribed(b, subs)
	if st := f.a.LiveStats(); st.Queries != queries {
		b.Fatalf("%d queries, want %d", st.Queries, queries)
	}
	return f
}

// listen connects one in-process client and opens its listen stream.
func (f *fanout) listen(b *testing.B, srv *server.MCPServer, uris []string) {
	c := connect(b, srv) // registers its session: f.session
	f.clients = append(f.clients, c)
	ls := &listenStream{session: f.session, uris: uris, meta: make(chan map[string]any, 1)}
	f.listens = append(f.listens, ls)
	ch := ls.session.NotificationChannel() // what the client's transport reads
	counted := int64(0)                    // by this client, not yet in received
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		// The transport's one goroutine calls this, one notification
		// after another.
		switch n.Method {
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			ls.meta <- n.Params.Meta
		case string(mcp.MethodNotificationResourceUpdated):
			counted++
		}
		if counted > 0 && len(ch) == 0 { // the last one queued, for now
			f.add(counted)
			counted = 0
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
	if f.writer != nil {
		f.a.ChangedContext(f.writer, f.cmd.change)
	} else {
		f.a.Changed(f.cmd.change)
	}
	f.wait(b, want)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.a.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
}

// add adds k notifications to those received, and tells wait when they
// reach the target.
func (f *fanout) add(k int64) {
	n := f.received.Add(k)
	if t := f.target.Load(); n >= t && n-k < t {
		f.reached <- struct{}{}
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

// settle lets the garbage and the goroutines of a setup settle, before a
// benchmark that measures the CPU of the whole process. It hands the freed
// memory back to the OS at once: left to it, the runtime's background
// scavenger returns the garbage of the setup (and of the run before) over
// the next seconds, and that, not the subscriptions, is what Idle would
// measure.
func settle() {
	debug.FreeOSMemory()
	time.Sleep(100 * time.Millisecond)
}
