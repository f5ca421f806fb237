package main

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/mcplive/adapter"
)

// The commands are plain Go functions: these tests call them directly, the
// way the application itself could. main_test.go drives them through MCP.

func newTestShop(t *testing.T) *shop {
	t.Helper()
	st := newTestStore(t)
	return &shop{st: st, a: newAdapter(st, quietLogger())}
}

// wantFields checks that err is a validation error naming exactly fields, in
// order: every bad field is reported, not just the first.
func wantFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	var ve *adapter.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v, want a *adapter.ValidationError on %q", err, fields)
	}
	var got []string
	for _, fe := range ve.Errors {
		got = append(got, fe.Field)
		if fe.Message == "" {
			t.Errorf("field %q has no message", fe.Field)
		}
	}
	if !reflect.DeepEqual(got, fields) {
		t.Errorf("fields in error %v, want %q", got, fields)
	}
}

func TestIndex(t *testing.T) {
	s := newTestShop(t)
	ctx := t.Context()

	res, err := s.index(ctx, IndexArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Page != 1 || res.PerPage != 20 || len(res.Customers) != 20 || res.Total != len(seedNames()) {
		t.Errorf("defaults: page %d, per_page %d, %d customers of %d", res.Page, res.PerPage, len(res.Customers), res.Total)
	}
	if res.Customers[0].Name != "Ada Lovelace" {
		t.Errorf("first by name is %q, want Ada Lovelace", res.Customers[0].Name)
	}

	res, err = s.index(ctx, IndexArgs{Search: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 || res.Customers[0].Name != "Ada Lovelace" {
		t.Errorf("search ada: %+v", res)
	}

	res, err = s.index(ctx, IndexArgs{Sort: SortByCreatedAt, Direction: Descending, PerPage: new(1)})
	if err != nil {
		t.Fatal(err)
	}
	if newest := seedNames()[len(seedNames())-1]; res.Customers[0].Name != newest {
		t.Errorf("newest is %q, want %q", res.Customers[0].Name, newest)
	}

	res, err = s.index(ctx, IndexArgs{Page: new(1 << 40)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Customers == nil || len(res.Customers) != 0 || res.Total != len(seedNames()) {
		t.Errorf("a page past the end: %+v, want an empty list and the total", res)
	}
}

// call runs the command name with args as the adapter does for an agent:
// held to the published schema, then to Validate.
func call(t *testing.T, s *shop, name string, args any) error {
	t.Helper()
	_, err := s.a.Call(t.Context(), name, args)
	return err
}

// The schema's tags hold customers_index's arguments: nothing else does.
func TestIndexArguments(t *testing.T) {
	s := newTestShop(t)
	if err := call(t, s, "customers_index", IndexArgs{Page: new(3), PerPage: new(100), Sort: SortByName, Direction: Ascending}); err != nil {
		t.Errorf("valid arguments: %v", err)
	}
	wantFields(t, call(t, s, "customers_index", IndexArgs{Sort: "email", Direction: "up", Page: new(0), PerPage: new(0)}),
		"direction", "page", "per_page", "sort")
	wantFields(t, call(t, s, "customers_index", IndexArgs{PerPage: new(101)}), "per_page")
	wantFields(t, call(t, s, "customers_index", IndexArgs{Search: strings.Repeat("a", 201)}), "search")
}

func TestShow(t *testing.T) {
	s := newTestShop(t)
	c, err := s.show(t.Context(), ShowArgs{ID: 1})
	if err != nil || c.Name != "Ada Lovelace" {
		t.Errorf("show 1: %+v, %v", c, err)
	}
	if _, err := s.show(t.Context(), ShowArgs{ID: 9999}); !errors.Is(err, adapter.ErrNotFound) {
		t.Errorf("show 9999: %v, want adapter.ErrNotFound", err)
	}
}

func TestOrdersBetween(t *testing.T) {
	s := newTestShop(t)
	res, err := s.ordersBetween(t.Context(), OrdersBetweenArgs{From: "2023-06-01", To: "2023-12-31", Status: StatusPaid})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count == 0 || res.Count != len(res.Orders) {
		t.Fatalf("count %d, %d orders", res.Count, len(res.Orders))
	}
	var sum int64
	for _, o := range res.Orders {
		sum += o.AmountCents
		if o.Status != "paid" || o.PlacedOn < "2023-06-01" || o.PlacedOn > "2023-12-31" {
			t.Errorf("order outside the query: %+v", o)
		}
	}
	if sum != res.TotalAmountCents {
		t.Errorf("total %d, sum of orders %d", res.TotalAmountCents, sum)
	}

	if err := call(t, s, "orders_between", OrdersBetweenArgs{From: "2024-01-01", To: "2024-01-01"}); err != nil {
		t.Errorf("one day: %v", err)
	}
	wantFields(t, call(t, s, "orders_between", OrdersBetweenArgs{From: "2024-13-01", To: "yesterday", Status: "lost"}),
		"from", "status", "to")
	// The one rule Validate keeps, beside a failure of the schema.
	wantFields(t, call(t, s, "orders_between", OrdersBetweenArgs{From: "2024-02-01", To: "2024-01-31"}), "to")
	wantFields(t, call(t, s, "orders_between", OrdersBetweenArgs{From: "2024-02-01", To: "2024-01-31", Status: "lost"}),
		"status", "to")
}

func TestExportAndByIDs(t *testing.T) {
	s := newTestShop(t)
	all, err := s.export(t.Context(), ExportArgs{})
	if err != nil || len(all.Customers) != len(seedNames()) {
		t.Errorf("export: %d customers, %v", len(all.Customers), err)
	}

	res, err := s.byIDs(t.Context(), ByIDsArgs{IDs: []int64{2, 1, 9999, 2, 9999}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Customers) != 2 || res.Customers[0].ID != 1 || res.Customers[1].ID != 2 {
		t.Errorf("customers %+v, want 1 and 2", res.Customers)
	}
	if !reflect.DeepEqual(res.Missing, []int64{9999}) {
		t.Errorf("missing %v, want [9999]", res.Missing)
	}
	wantFields(t, call(t, s, "customers_by_ids", ByIDsArgs{}), "ids")
	wantFields(t, call(t, s, "customers_by_ids", ByIDsArgs{IDs: make([]int64, 101)}), "ids")
}

func TestCreateCustomer(t *testing.T) {
	s := newTestShop(t)
	ctx := t.Context()
	wantFields(t, call(t, s, "customers_create", CreateCustomerArgs{Name: "  ", Email: "nobody"}), "email", "name")

	c, err := s.createCustomer(ctx, CreateCustomerArgs{Name: " Ada Byron ", Email: "ada.byron@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "Ada Byron" || c.CreatedAt == "" {
		t.Errorf("created %+v", c)
	}
	// The write is visible to the next read.
	res, err := s.index(ctx, IndexArgs{Search: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 2 {
		t.Errorf("search ada after create: %d customers, want 2", res.Total)
	}

	_, err = s.createCustomer(ctx, CreateCustomerArgs{Name: "Ada", Email: "ADA.BYRON@example.com"})
	wantFields(t, err, "email")
}

func TestUpdateCustomer(t *testing.T) {
	s := newTestShop(t)
	ctx := t.Context()
	wantFields(t, call(t, s, "customers_update", UpdateCustomerArgs{ID: 1}), "")
	wantFields(t, call(t, s, "customers_update", UpdateCustomerArgs{ID: 1, Name: new(""), Email: new("a b@c")}), "email", "name")

	c, err := s.updateCustomer(ctx, UpdateCustomerArgs{ID: 1, Name: new("Augusta Ada King")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "Augusta Ada King" || c.Email != "ada.lovelace@example.com" {
		t.Errorf("updated %+v", c)
	}
	if got, _ := s.show(ctx, ShowArgs{ID: 1}); got != c {
		t.Errorf("show after update: %+v, want %+v", got, c)
	}

	if _, err := s.updateCustomer(ctx, UpdateCustomerArgs{ID: 9999, Name: new("x")}); !errors.Is(err, adapter.ErrNotFound) {
		t.Errorf("update 9999: %v, want adapter.ErrNotFound", err)
	}
	_, err = s.updateCustomer(ctx, UpdateCustomerArgs{ID: 1, Email: new("alan.turing@example.com")})
	wantFields(t, err, "email")
}

func TestCreateOrder(t *testing.T) {
	s := newTestShop(t)
	ctx := t.Context()
	wantFields(t, call(t, s, "orders_create", CreateOrderArgs{CustomerID: 1, AmountCents: 0, Status: "lost", PlacedOn: "2024-02-30"}),
		"amount_cents", "placed_on", "status")

	o, err := s.createOrder(ctx, CreateOrderArgs{CustomerID: 1, AmountCents: 4200, Status: StatusOpen, PlacedOn: "2030-01-01"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.ordersBetween(ctx, OrdersBetweenArgs{From: "2030-01-01", To: "2030-01-01"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Orders) != 1 || res.Orders[0] != o || res.TotalAmountCents != 4200 {
		t.Errorf("orders on 2030-01-01: %+v, want only %+v", res, o)
	}

	_, err = s.createOrder(ctx, CreateOrderArgs{CustomerID: 9999, AmountCents: 1, Status: StatusPaid, PlacedOn: "2030-01-01"})
	wantFields(t, err, "customer_id")
}

// No total of orders_between may overflow: two orders of 6.9e18 cents once
// added up to a negative total. orders_create refuses an amount above its
// maximum, and the largest that it takes still add up exactly.
func TestOrderTotalsDoNotOverflow(t *testing.T) {
	s := newTestShop(t)
	ctx := t.Context()
	day := OrdersBetweenArgs{From: "2031-01-01", To: "2031-01-01"}
	for _, amount := range []int64{1<<62 + 1<<61, maxAmountCents + 1, math.MaxInt64} {
		_, err := s.a.Call(ctx, "orders_create", CreateOrderArgs{CustomerID: 1, AmountCents: amount, Status: StatusOpen, PlacedOn: day.From})
		wantFields(t, err, "amount_cents")
	}
	for range 3 {
		if _, err := s.a.Call(ctx, "orders_create", CreateOrderArgs{CustomerID: 1, AmountCents: maxAmountCents, Status: StatusOpen, PlacedOn: day.From}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.ordersBetween(ctx, day)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 3 || res.TotalAmountCents != 3*maxAmountCents {
		t.Errorf("%d orders of %d cents: total %d", res.Count, int64(maxAmountCents), res.TotalAmountCents)
	}
}

// PostgreSQL's text cannot hold the character NUL: a name or search with one
// would be an internal error there, while SQLite stored and searched it. So
// the schema refuses NUL on both databases, as a field error.
func TestNULIsRefused(t *testing.T) {
	s := newTestShop(t)
	for _, tc := range []struct {
		command string
		args    any
		field   string
	}{
		{"customers_index", IndexArgs{Search: "\x00"}, "search"},
		{"customers_index", IndexArgs{Search: "ada\x00"}, "search"},
		{"customers_create", CreateCustomerArgs{Name: "Ada\x00", Email: "nul@example.com"}, "name"},
		{"customers_create", CreateCustomerArgs{Name: "\x00", Email: "nul@example.com"}, "name"},
		{"customers_create", CreateCustomerArgs{Name: "Ada", Email: "n\x00l@example.com"}, "email"},
		// format=email takes a NUL inside a quoted local part.
		{"customers_create", CreateCustomerArgs{Name: "Ada", Email: "\"n\x00l\"@example.com"}, "email"},
		{"customers_update", UpdateCustomerArgs{ID: 1, Email: new("\"n\x00l\"@example.com")}, "email"},
		{"customers_update", UpdateCustomerArgs{ID: 1, Name: new("A\x00da")}, "name"},
	} {
		wantFields(t, call(t, s, tc.command, tc.args), tc.field)
	}
	// The patterns still take what they took.
	for _, tc := range []struct {
		command string
		args    any
	}{
		{"customers_index", IndexArgs{Search: "50% off_\\"}},
		{"customers_index", IndexArgs{Search: " "}},
		{"customers_create", CreateCustomerArgs{Name: " Åke\tStraße ", Email: "ake@example.com"}},
		{"customers_update", UpdateCustomerArgs{ID: 1, Name: new("x")}},
	} {
		if err := call(t, s, tc.command, tc.args); err != nil {
			t.Errorf("%s %+v: %v", tc.command, tc.args, err)
		}
	}
}

// A name is not blank. The schema's pattern cannot say it alone: its \s is
// ASCII white space, while the commands trim what Go calls space
// (unicode.IsSpace), so a name of a no-break space or a \v passed the
// pattern and was stored as "".
func TestBlankNamesAreRefused(t *testing.T) {
	s := newTestShop(t)
	for i, name := range []string{"\u00a0", "\v", "\u3000", "\u2028", "\u0085", " \u00a0\t\u205f "} {
		email := fmt.Sprintf("blank%d@example.com", i)
		wantFields(t, call(t, s, "customers_create", CreateCustomerArgs{Name: name, Email: email}), "name")
		wantFields(t, call(t, s, "customers_update", UpdateCustomerArgs{ID: 1, Name: &name}), "name")
	}
	if c, err := s.show(t.Context(), ShowArgs{ID: 1}); err != nil || c.Name != "Ada Lovelace" {
		t.Errorf("customer 1 after refused updates: %+v, %v", c, err)
	}
}
