package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// The re-run benchmarks: 1,000 distinct customers_show subscriptions on the
// example's store, and one Changed("customers"), which re-runs all of them;
// an op ends when the registry is idle again. Nothing was written, so no
// one is notified: what is measured is the re-runs. Batched, customers_show
// has its batch form (batch.go), as register declares it; Unbatched it
// has not, and each subscription costs one query.

const rerunSubs = 1000

func BenchmarkRerun1000Batched(b *testing.B)   { benchRerun(b, benchSQLite(b), true) }
func BenchmarkRerun1000Unbatched(b *testing.B) { benchRerun(b, benchSQLite(b), false) }

// The same on PostgreSQL (pgfeed/pgtest: a throwaway local server, over
// loopback, with fsync off), skipped without one.
func BenchmarkRerun1000BatchedPostgres(b *testing.B)   { benchRerun(b, benchPostgres(b), true) }
func BenchmarkRerun1000UnbatchedPostgres(b *testing.B) { benchRerun(b, benchPostgres(b), false) }

// benchSQLite is the example's in-memory SQLite store with rerunSubs
// customers.
func benchSQLite(b *testing.B) *store {
	st, err := openStore(b.Context(), "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return withCustomers(b, st)
}

func benchPostgres(b *testing.B) *store {
	st, err := openPostgres(b.Context(), pgtest.Start(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return withCustomers(b, st)
}

// withCustomers adds customers to st until it has rerunSubs.
func withCustomers(b *testing.B, st *store) *store {
	ctx := b.Context()
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := len(seedNames()); i < rerunSubs; i++ {
		name := fmt.Sprintf("Customer %d", i+1)
		if _, err := st.createCustomer(ctx, name, fmt.Sprintf("customer%d@example.com", i+1), when); err != nil {
			b.Fatal(err)
		}
	}
	return st
}

func benchRerun(b *testing.B, st *store, batched bool) {
	s := &shop{st: st}
	a := adapter.Wrap(server.NewMCPServer("bench", "1"), adapter.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		adapter.WithSubscriptionCap(rerunSubs), adapter.WithClientSubscriptionCap(rerunSubs))
	var opts []adapter.CommandOption
	if batched {
		opts = append(opts, adapter.WithBatch(s.showMany))
	}
	adapter.Live(a, "customers_show", "One customer, by id.", s.show, opts...)
	s.a = a
	uris := make([]string, rerunSubs)
	for i := range uris {
		uris[i] = fmt.Sprintf("app://customers_show/%d", i+1)
	}
	sub, err := adaptertest.New(b, a).Listen(uris...)
	if err != nil || len(sub.Acknowledged) != rerunSubs {
		b.Fatalf("listen: %v, %d acknowledged", err, len(sub.Acknowledged))
	}
	before := a.LiveStats()
	ctx := context.Background()
	b.ResetTimer()
	loops := 0
	for b.Loop() {
		loops++
		a.Changed(tableCustomers)
		if err := a.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := a.LiveStats()
	if reruns := after.Reruns - before.Reruns; reruns != uint64(loops*rerunSubs) || after.Notified != before.Notified {
		b.Fatalf("%d re-runs and %d notifications in %d changes, want %d re-runs each and none",
			reruns, after.Notified-before.Notified, loops, rerunSubs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(loops*rerunSubs), "ns/rerun")
}
