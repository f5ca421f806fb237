package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
	"unicode"
)

// newTestStore opens a fresh in-memory store that the test closes.
func newTestStore(t *testing.T) *store {
	t.Helper()
	st, err := openStore(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func allOrders(t *testing.T, st *store) []Order {
	t.Helper()
	orders, err := st.ordersBetween(t.Context(), "0000-01-01", "9999-12-31", "")
	if err != nil {
		t.Fatal(err)
	}
	return orders
}

func TestSeedIsDeterministic(t *testing.T) {
	a, b := newTestStore(t), newTestStore(t)

	ca, err := a.allCustomers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.allCustomers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ca, cb) {
		t.Error("two fresh stores have different customers")
	}
	if len(ca) < 50 {
		t.Errorf("%d customers, want at least 50", len(ca))
	}
	if ca[0].Name != "Ada Lovelace" || ca[0].Email != "ada.lovelace@example.com" {
		t.Errorf("customer 1 = %+v, want Ada Lovelace", ca[0])
	}

	oa, ob := allOrders(t, a), allOrders(t, b)
	if !reflect.DeepEqual(oa, ob) {
		t.Error("two fresh stores have different orders")
	}
	if len(oa) != seedOrders {
		t.Errorf("%d orders, want %d", len(oa), seedOrders)
	}
	statuses := map[string]int{}
	for _, o := range oa {
		statuses[o.Status]++
	}
	for _, s := range []string{"open", "paid", "cancelled"} {
		if statuses[s] == 0 {
			t.Errorf("no %s orders in the seed", s)
		}
	}
}

func TestSeedOnlyIntoEmptyDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.db")
	st, err := openStore(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.createCustomer(t.Context(), "Hypatia", "hypatia@example.com", time.Now()); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, err = openStore(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.allCustomers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(seedNames()) + 1; len(all) != n {
		t.Errorf("reopened database has %d customers, want %d (seed once, keep the write)", len(all), n)
	}
}

func TestListCustomers(t *testing.T) {
	st := newTestStore(t)
	ctx := t.Context()

	got, total, err := st.listCustomers(ctx, customerPage{Search: "ADA", SortBy: "name", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 || len(got) != 1 || got[0].Name != "Ada Lovelace" {
		t.Errorf("search ADA: total %d, %+v; want only Ada Lovelace", total, got)
	}

	// Wildcard characters are literals, not patterns.
	if _, total, _ := st.listCustomers(ctx, customerPage{Search: "%", SortBy: "name", Limit: 20}); total != 0 {
		t.Errorf("search %%: total %d, want 0", total)
	}

	// Pages tile the sorted list without overlap.
	var paged []Customer
	for off := 0; ; off += 7 {
		page, total, err := st.listCustomers(ctx, customerPage{SortBy: "created_at", Desc: true, Limit: 7, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		if total != len(seedNames()) {
			t.Fatalf("total %d, want %d", total, len(seedNames()))
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
	}
	if len(paged) != len(seedNames()) {
		t.Fatalf("pages hold %d customers, want %d", len(paged), len(seedNames()))
	}
	for i := 1; i < len(paged); i++ {
		if paged[i-1].CreatedAt < paged[i].CreatedAt {
			t.Fatalf("not sorted by created_at desc at %d: %s < %s", i, paged[i-1].CreatedAt, paged[i].CreatedAt)
		}
	}

	if _, _, err := st.listCustomers(ctx, customerPage{SortBy: "email; DROP TABLE customers"}); err == nil {
		t.Error("unknown sort key accepted")
	}
}

func TestWrites(t *testing.T) {
	st := newTestStore(t)
	ctx := t.Context()

	c, err := st.createCustomer(ctx, "Hypatia", "hypatia@example.com", time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != int64(len(seedNames())+1) || c.CreatedAt != "2025-03-01T12:00:00Z" {
		t.Errorf("created %+v", c)
	}
	if got, err := st.customer(ctx, c.ID); err != nil || got != c {
		t.Errorf("read back %+v, %v; want %+v", got, err, c)
	}

	// Emails are unique regardless of case.
	if _, err := st.createCustomer(ctx, "Ada again", "ADA.lovelace@example.com", time.Now()); !errors.Is(err, errEmailTaken) {
		t.Errorf("duplicate email: %v, want errEmailTaken", err)
	}

	name := "Hypatia of Alexandria"
	u, err := st.updateCustomer(ctx, c.ID, &name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != name || u.Email != c.Email {
		t.Errorf("updated %+v", u)
	}
	if _, err := st.updateCustomer(ctx, 9999, &name, nil); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("update unknown id: %v, want sql.ErrNoRows", err)
	}
	taken := "grace.hopper@example.com"
	if _, err := st.updateCustomer(ctx, c.ID, nil, &taken); !errors.Is(err, errEmailTaken) {
		t.Errorf("update to a taken email: %v, want errEmailTaken", err)
	}

	o, err := st.createOrder(ctx, Order{CustomerID: c.ID, AmountCents: 1234, Status: "open", PlacedOn: "2025-03-02"})
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != seedOrders+1 {
		t.Errorf("order id %d, want %d", o.ID, seedOrders+1)
	}
	got, err := st.ordersBetween(ctx, "2025-03-02", "2025-03-02", "open")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[len(got)-1] != o {
		t.Errorf("new order not found: %+v", got)
	}
	if _, err := st.createOrder(ctx, Order{CustomerID: 9999, AmountCents: 1, Status: "open", PlacedOn: "2025-03-02"}); !errors.Is(err, errNoCustomer) {
		t.Errorf("order for unknown customer: %v, want errNoCustomer", err)
	}
}

// TestConcurrentReadsAndWrites runs under -race: the in-memory store has one
// connection that callers take turns on, the file store several connections
// that wait for SQLite's locks. Neither may fail.
// -db :memory: is SQLite's own name for an in-memory database; opened as a
// file, every connection of the pool was a database of its own, empty, and
// concurrent requests failed with "no such table: customers".
func TestConcurrentReadsAndWrites(t *testing.T) {
	for name, path := range map[string]string{"memory": "", ":memory:": ":memory:", "file": filepath.Join(t.TempDir(), "shop.db")} {
		t.Run(name, func(t *testing.T) {
			st, err := openStore(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for i := range 20 {
				wg.Go(func() {
					_, err := st.createOrder(ctx, Order{CustomerID: 1, AmountCents: int64(100 + i), Status: "paid", PlacedOn: "2025-01-01"})
					errs <- err
				})
				wg.Go(func() {
					_, _, err := st.listCustomers(ctx, customerPage{Search: "a", SortBy: "name", Limit: 10})
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if n := len(allOrders(t, st)); n != seedOrders+20 {
				t.Errorf("%d orders, want %d", n, seedOrders+20)
			}
		})
	}
}

func TestSeedEmail(t *testing.T) {
	for name, want := range map[string]string{
		"Ada Lovelace":       "ada.lovelace@example.com",
		"Tim Berners-Lee":    "tim.berners-lee@example.com",
		"Kurt Gödel":         "kurt.godel@example.com",
		"Karen Spärck Jones": "karen.sparck.jones@example.com",
		"Per Martin-Löf":     "per.martin-lof@example.com",
	} {
		if got := seedEmail(name); got != want {
			t.Errorf("seedEmail(%q) = %q, want %q", name, got, want)
		}
	}
	// Every seeded address is ASCII and distinct.
	seen := map[string]bool{}
	for _, name := range seedNames() {
		email := seedEmail(name)
		for _, r := range email {
			if r > unicode.MaxASCII {
				t.Errorf("seedEmail(%q) = %q, not ASCII", name, email)
				break
			}
		}
		if seen[email] {
			t.Errorf("two customers have %s", email)
		}
		seen[email] = true
	}
}

// -db names a file, not a URI: the driver opens "file:"+path as an SQLite
// URI, which percent-decodes it, so -db a%41.db opened aA.db; and a path
// that starts with "//" (/tmp is also //tmp) made "file://", whose next
// segment SQLite takes for a host and refuses.
func TestDatabasePathIsLiteral(t *testing.T) {
	for _, name := range []string{"a%41.db", "100%.db", "x%2Fy.db", "shop.db"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		if name == "shop.db" {
			path = "/" + path // t.TempDir is absolute
		}
		st, err := openStore(t.Context(), path)
		if err != nil {
			t.Errorf("-db %s: %v", name, err)
			continue
		}
		st.Close()
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("-db %s: %v; the directory holds %q", name, err, names)
		}
	}
}
