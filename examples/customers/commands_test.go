package main

import (
	"errors"
	"reflect"
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
// order: Validate must report every bad field, not just the first.
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

func TestIndexValidate(t *testing.T) {
	if err := (IndexArgs{Page: new(3), PerPage: new(100), Sort: SortByName, Direction: Ascending}).Validate(); err != nil {
		t.Errorf("valid arguments: %v", err)
	}
	wantFields(t, IndexArgs{Sort: "email", Direction: "up", Page: new(0), PerPage: new(0)}.Validate(),
		"sort", "direction", "page", "per_page")
	wantFields(t, IndexArgs{PerPage: new(101)}.Validate(), "per_page")
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

	if err := (OrdersBetweenArgs{From: "2024-01-01", To: "2024-01-01"}).Validate(); err != nil {
		t.Errorf("one day: %v", err)
	}
	wantFields(t, OrdersBetweenArgs{From: "2024-13-01", To: "yesterday", Status: "lost"}.Validate(), "from", "to", "status")
	wantFields(t, OrdersBetweenArgs{From: "2024-02-01", To: "2024-01-31"}.Validate(), "to")
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
	wantFields(t, ByIDsArgs{}.Validate(), "ids")
}

func TestCreateCustomer(t *testing.T) {
	s := newTestShop(t)
	ctx := t.Context()
	wantFields(t, CreateCustomerArgs{Name: "  ", Email: "nobody"}.Validate(), "name", "email")

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
	wantFields(t, UpdateCustomerArgs{ID: 1}.Validate(), "")
	wantFields(t, UpdateCustomerArgs{ID: 1, Name: new(""), Email: new("a b@c")}.Validate(), "name", "email")

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
	wantFields(t, CreateOrderArgs{CustomerID: 1, AmountCents: 0, Status: "lost", PlacedOn: "2024-02-30"}.Validate(),
		"amount_cents", "status", "placed_on")

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
