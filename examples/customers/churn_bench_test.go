package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// What an agent pays under churn (docs/watching.md): an agent watches the
// first page of customers, app://customers_index, and reads it again after
// every notification, as an agent that keeps its view current does, while
// a writer renames a customer on that page 50 times a second for 2 s (100
// writes, through customers_update). One op is that churn, and ends once
// the agent's last read shows the last write. Reported per op: the
// notifications the agent heard (each cost it a read), the kilobytes it
// read, and how long after the last write its last notification came.
//
//	go test -run '^$' -bench AgentUnderChurn -benchtime 1x -count 3 ./examples/customers
//
// Each sub-benchmark declares the example's own customers_index and
// customers_update on the example's store; customers_index is paced with
// WithNotifyInterval as the name says (every: not paced).

const (
	churnWrites = 100
	churnEvery  = 20 * time.Millisecond // 50 writes a second
)

func BenchmarkAgentUnderChurn(b *testing.B) {
	for _, every := range []time.Duration{0, 250 * time.Millisecond, time.Second} {
		name := "every"
		if every > 0 {
			name = "paced=" + every.String()
		}
		b.Run(name, func(b *testing.B) { benchChurn(b, every) })
	}
}

// churnAgent is the watching agent: an in-process client on 2026-07-28
// that reads its URI again after each notification.
type churnAgent struct {
	c     *client.Client
	notes chan time.Time // when each notification arrived

	mu    sync.Mutex
	heard int
	reads int
	bytes int
	last  string    // what its last read answered
	at    time.Time // when its last notification came
	idle  *sync.Cond
}

func benchChurn(b *testing.B, every time.Duration) {
	st := benchSQLite(b)
	s := &shop{st: st}
	a := adapter.Wrap(server.NewMCPServer("churn", "1"), adapter.WithLogger(quietLogger()))
	s.a = a
	var opts []adapter.CommandOption
	if every > 0 {
		opts = append(opts, adapter.WithNotifyInterval(every))
	}
	adapter.Live(a, "customers_index", "A page of customers, searched and sorted.", s.index, opts...)
	adapter.Command(a, "customers_update", "Change a customer's name or email.", s.updateCustomer)

	const uri = "app://customers_index"
	ag := newChurnAgent(b, a, uri)
	ctx := context.Background()
	var heard, reads, kb, lagMS float64
	loops := 0
	for b.Loop() {
		loops++
		h0, r0, k0 := ag.counts()
		tick := time.NewTicker(churnEvery)
		var name string
		for i := range churnWrites {
			<-tick.C
			name = fmt.Sprintf("Ada Lovelace %d-%d", loops, i)
			if _, err := a.Call(ctx, "customers_update", UpdateCustomerArgs{ID: 1, Name: &name}); err != nil {
				b.Fatal(err)
			}
		}
		tick.Stop()
		lastWrite := time.Now()
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := a.WaitIdle(waitCtx); err != nil {
			b.Fatal(err)
		}
		cancel()
		at := ag.settle(b, name)
		h, r, k := ag.counts()
		heard += float64(h - h0)
		reads += float64(r - r0)
		kb += float64(k-k0) / 1024
		lagMS += float64(at.Sub(lastWrite)) / float64(time.Millisecond)
	}
	n := float64(loops)
	b.ReportMetric(churnWrites, "writes/op")
	b.ReportMetric(heard/n, "notifications/op")
	b.ReportMetric(reads/n, "rereads/op")
	b.ReportMetric(kb/n, "read-KB/op")
	b.ReportMetric(lagMS/n, "last-ms")
}

func newChurnAgent(b *testing.B, a *adapter.Adapter, uri string) *churnAgent {
	c, err := client.NewInProcessClient(a.Server())
	if err != nil {
		b.Fatal(err)
	}
	ag := &churnAgent{c: c, notes: make(chan time.Time, churnWrites+8)}
	ag.idle = sync.NewCond(&ag.mu)
	acked := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationResourceUpdated):
			ag.mu.Lock()
			ag.heard++
			ag.mu.Unlock()
			ag.notes <- time.Now()
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			acked <- struct{}{}
		}
	})
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "churn-agent", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}},
		func(err error) { b.Error("listen:", err) })
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		b.Fatal("listen: no acknowledgement within 10 s")
	}
	done := make(chan struct{})
	go ag.run(uri, done)
	b.Cleanup(func() {
		stop()
		close(done)
		c.Close()
	})
	return ag
}

// run reads uri after each notification, until done.
func (ag *churnAgent) run(uri string, done <-chan struct{}) {
	for {
		select {
		case at := <-ag.notes:
			req := mcp.ReadResourceRequest{}
			req.Params.URI = uri
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := ag.c.ReadResource(ctx, req)
			cancel()
			text := ""
			if err == nil && len(res.Contents) == 1 {
				if tc, ok := res.Contents[0].(mcp.TextResourceContents); ok {
					text = tc.Text
				}
			}
			ag.mu.Lock()
			ag.reads++
			ag.bytes += len(text)
			ag.last, ag.at = text, at
			ag.idle.Broadcast()
			ag.mu.Unlock()
		case <-done:
			return
		}
	}
}

func (ag *churnAgent) counts() (heard, reads, bytes int) {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return ag.heard, ag.reads, ag.bytes
}

// settle waits until the agent has read after every notification it heard,
// and its last read shows name, and returns when its last notification
// came.
func (ag *churnAgent) settle(b *testing.B, name string) time.Time {
	deadline := time.AfterFunc(30*time.Second, func() {
		ag.mu.Lock()
		ag.idle.Broadcast()
		ag.mu.Unlock()
	})
	defer deadline.Stop()
	start := time.Now()
	ag.mu.Lock()
	defer ag.mu.Unlock()
	for ag.reads < ag.heard || !strings.Contains(ag.last, name) {
		if time.Since(start) > 30*time.Second {
			b.Fatalf("after 30 s: %d notifications, %d reads, the last without %q", ag.heard, ag.reads, name)
		}
		ag.idle.Wait()
	}
	return ag.at
}
