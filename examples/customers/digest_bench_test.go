package main

import (
	"context"
	"encoding/json"
	"io"
	"testing"
)

// What one live re-run of the example's read commands costs on its
// embedded SQLite store, for the decision recorded in docs/performance.md
// ("The result digest"). A re-run is the command, then the digest the
// adapter takes of its result to tell whether it changed. The digest is
// the adapter's own and unexported: the adapter's BenchmarkDigest
// measures it on these same results (their JSON, decoded into copies of
// these types). Encoding the result as JSON, measured here and there, ties
// the two together: it is the bulk of the digest, and it costs the same on
// both sides when the values are the same.

// rerunCase is one read command with the arguments a subscription would
// hold.
type rerunCase struct {
	name string
	run  func(context.Context, *shop) (any, error)
}

func rerunCases() []rerunCase {
	return []rerunCase{
		{"customers_index", func(ctx context.Context, s *shop) (any, error) {
			return s.index(ctx, IndexArgs{}) // the first page of 20, by name
		}},
		{"customers_show", func(ctx context.Context, s *shop) (any, error) {
			return s.show(ctx, ShowArgs{ID: 9}) // Kurt Gödel: not all ASCII
		}},
		{"orders_between/month", func(ctx context.Context, s *shop) (any, error) {
			return s.ordersBetween(ctx, OrdersBetweenArgs{From: "2023-07-01", To: "2023-07-31"}) // 15 orders
		}},
		{"orders_between/year", func(ctx context.Context, s *shop) (any, error) {
			return s.ordersBetween(ctx, OrdersBetweenArgs{From: "2024-01-01", To: "2024-12-31"}) // 212 orders
		}},
	}
}

// BenchmarkRerun measures each command on the seeded in-memory store
// (command), and the JSON encoding of its result (json). The command is
// called directly, without the adapter's middleware and read recording: a
// smaller re-run, so that the digest's share of it is, if anything,
// overstated.
func BenchmarkRerun(b *testing.B) {
	ctx := context.Background()
	st, err := openStore(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := &shop{st: st} // read commands never use the adapter
	for _, c := range rerunCases() {
		res, err := c.run(ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/command", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.run(ctx, s); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			enc := json.NewEncoder(io.Discard)
			for b.Loop() {
				if err := enc.Encode(res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRerunCases checks that the benchmark's commands return what its
// comments and the adapter's copy of their results say.
func TestRerunCases(t *testing.T) {
	s := &shop{st: newTestStore(t)}
	want := map[string]int{"customers_index": 20, "customers_show": 1, "orders_between/month": 15, "orders_between/year": 212}
	for _, c := range rerunCases() {
		res, err := c.run(t.Context(), s)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var rows int
		switch r := res.(type) {
		case IndexResult:
			rows = len(r.Customers)
		case Customer:
			rows = 1
		case OrdersResult:
			rows = len(r.Orders)
		}
		if rows != want[c.name] {
			t.Errorf("%s: %d rows, want %d", c.name, rows, want[c.name])
		}
	}
}
