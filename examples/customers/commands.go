package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mcplive/adapter"
)

// register declares every command of the example on a. Tests and benchmarks
// call it too, so that they exercise exactly the server main serves.
func register(a *adapter.Adapter, st *store) {
	s := &shop{st: st, a: a}

	// Live commands are read-only. Each is a tool; those whose arguments
	// are all scalars are also a URI template an agent can read and watch.
	adapter.Live(a, "customers_index", "A page of customers, searched and sorted.", s.index)
	// A change to customers re-runs every watched customers_show, and a
	// change to orders every watched orders_between: their batch forms
	// answer all of those in one query (batch.go).
	adapter.Live(a, "customers_show", "One customer, by id.", s.show, adapter.WithBatch(s.showMany))
	adapter.Live(a, "orders_between", "The orders placed between two days (inclusive), with their total.",
		s.ordersBetween, adapter.WithBatch(s.ordersBetweenMany))
	// Exporting everything is something a person should approve, so it is
	// a tool only: a read or a subscription cannot ask anyone. It reads the
	// same table whatever its arguments, so it says so once, statically.
	adapter.Live(a, "customers_export", "Every customer, for a download.", s.export,
		adapter.NeedsConfirmation(), adapter.WithReads(tableCustomers))
	// A list of ids has no place in a URI template: a tool only.
	adapter.Live(a, "customers_by_ids", "The customers with the given ids.", s.byIDs)
	// Per user: each signed-in user watches their own orders (users.go).
	adapter.Live(a, "my_orders", "Your own orders, oldest first (sign in with a bearer token).", s.myOrders)

	// Commands may write: tools only, named in writeCommands. Each calls
	// ChangedContext after its commit, with its request's context: a trace
	// of the request then leads to the re-runs and notifications it caused.
	adapter.Command(a, "customers_create", "Create a customer.", s.createCustomer)
	adapter.Command(a, "customers_update", "Change a customer's name or email.", s.updateCustomer)
	adapter.Command(a, "orders_create", "Record an order for a customer.", s.createOrder)
}

// writeCommands are the commands that write, which the read gate lets
// pass (gate.go).
var writeCommands = []string{"customers_create", "customers_update", "orders_create"}

// shop holds what the commands need: the data, and the adapter to tell about
// writes.
type shop struct {
	st *store
	a  *adapter.Adapter
}

// Keys name the data that live commands read (adapter.Reads) and that writes
// change (Adapter.Changed); a subscription re-runs when a change meets what
// its last run read. A key is a table ("customers") or one row of it
// ("customers/12"), and a change of a row also meets the readers of its
// whole table.
//
// So the lists read the table, customers_show reads only its row, and every
// write reports the row it touched: updating customer 12 re-runs the lists
// and customers_show/12, but not a subscription to customers_show/13.
const (
	tableCustomers = "customers"
	tableOrders    = "orders"
)

func customerKey(id int64) string { return fmt.Sprintf("%s/%d", tableCustomers, id) }
func orderKey(id int64) string    { return fmt.Sprintf("%s/%d", tableOrders, id) }

// IndexResult is one page of customers_index.
type IndexResult struct {
	Customers []Customer `json:"customers"`
	Total     int        `json:"total"` // how many match, on all pages
	Page      int        `json:"page"`
	PerPage   int        `json:"per_page"`
}

func (s *shop) index(ctx context.Context, args IndexArgs) (IndexResult, error) {
	adapter.Reads(ctx, tableCustomers)
	page, perPage := deref(args.Page, 1), deref(args.PerPage, 20)
	// Pages beyond the last are empty; the cap keeps the offset from
	// overflowing for absurd page numbers, even where int has 32 bits.
	offset := min(page-1, math.MaxInt32/maxPerPage) * perPage
	customers, total, err := s.st.listCustomers(ctx, customerPage{
		Search: args.Search, SortBy: string(cmp.Or(args.Sort, SortByName)), Desc: args.Direction == Descending,
		Limit: perPage, Offset: offset,
	})
	if err != nil {
		return IndexResult{}, err
	}
	return IndexResult{Customers: customers, Total: total, Page: page, PerPage: perPage}, nil
}

func (s *shop) show(ctx context.Context, args ShowArgs) (Customer, error) {
	// Report the read before the query: if the customer does not exist yet,
	// creating it must still wake this subscription.
	adapter.Reads(ctx, customerKey(args.ID))
	c, err := s.st.customer(ctx, args.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return Customer{}, customerNotFound(args.ID)
	}
	return c, err
}

// customerNotFound is the error of customers_show for a customer that does
// not exist. ErrNotFound makes a read answer "resource not found".
func customerNotFound(id int64) error {
	return fmt.Errorf("customer %d: %w", id, adapter.ErrNotFound)
}

// OrdersResult is the answer of orders_between.
type OrdersResult struct {
	Orders           []Order `json:"orders"`
	Count            int     `json:"count"`
	TotalAmountCents int64   `json:"total_amount_cents"`
}

func (s *shop) ordersBetween(ctx context.Context, args OrdersBetweenArgs) (OrdersResult, error) {
	adapter.Reads(ctx, tableOrders)
	orders, err := s.st.ordersBetween(ctx, args.From, args.To, string(args.Status))
	if err != nil {
		return OrdersResult{}, err
	}
	return ordersResult(orders), nil
}

// ordersResult totals orders.
func ordersResult(orders []Order) OrdersResult {
	res := OrdersResult{Orders: orders, Count: len(orders)}
	for _, o := range orders {
		res.TotalAmountCents += o.AmountCents
	}
	return res
}

// CustomerList is the answer of customers_export and customers_by_ids.
type CustomerList struct {
	Customers []Customer `json:"customers"`
	// Missing lists the requested ids that name no customer.
	Missing []int64 `json:"missing,omitempty"`
}

func (s *shop) export(ctx context.Context, _ ExportArgs) (CustomerList, error) {
	// No Reads call: WithReads declared the table at registration.
	customers, err := s.st.allCustomers(ctx)
	return CustomerList{Customers: customers}, err
}

func (s *shop) byIDs(ctx context.Context, args ByIDsArgs) (CustomerList, error) {
	keys := make([]string, len(args.IDs))
	for i, id := range args.IDs {
		keys[i] = customerKey(id)
	}
	adapter.Reads(ctx, keys...)
	customers, err := s.st.customersByIDs(ctx, args.IDs)
	if err != nil {
		return CustomerList{}, err
	}
	found := make(map[int64]bool, len(customers))
	for _, c := range customers {
		found[c.ID] = true
	}
	res := CustomerList{Customers: customers}
	for _, id := range args.IDs {
		if !found[id] {
			res.Missing = append(res.Missing, id)
			found[id] = true // report a repeated id once
		}
	}
	return res, nil
}

func (s *shop) createCustomer(ctx context.Context, args CreateCustomerArgs) (Customer, error) {
	c, err := s.st.createCustomer(ctx, strings.TrimSpace(args.Name), strings.TrimSpace(args.Email), time.Now())
	if errors.Is(err, errEmailTaken) {
		return Customer{}, fieldError("email", "already belongs to another customer")
	}
	if err != nil {
		return Customer{}, err
	}
	// After the commit, never before: a re-run must see the new row. The
	// row's key also wakes a customers_show of this id watched before the
	// customer existed (it read the row and found it missing).
	s.a.ChangedContext(ctx, customerKey(c.ID))
	return c, nil
}

func (s *shop) updateCustomer(ctx context.Context, args UpdateCustomerArgs) (Customer, error) {
	c, err := s.st.updateCustomer(ctx, args.ID, trimmed(args.Name), trimmed(args.Email))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Customer{}, fmt.Errorf("customer %d: %w", args.ID, adapter.ErrNotFound)
	case errors.Is(err, errEmailTaken):
		return Customer{}, fieldError("email", "already belongs to another customer")
	case err != nil:
		return Customer{}, err
	}
	s.a.ChangedContext(ctx, customerKey(c.ID))
	return c, nil
}

func (s *shop) createOrder(ctx context.Context, args CreateOrderArgs) (Order, error) {
	o, err := s.st.createOrder(ctx, Order{
		CustomerID: args.CustomerID, AmountCents: args.AmountCents,
		Status: string(args.Status), PlacedOn: args.PlacedOn,
	})
	if errors.Is(err, errNoCustomer) {
		return Order{}, fieldError("customer_id", fmt.Sprintf("no customer has id %d", args.CustomerID))
	}
	if err != nil {
		return Order{}, err
	}
	s.a.ChangedContext(ctx, orderKey(o.ID))
	return o, nil
}

// fieldError is a validation error of one field, from Validate or found by
// the database: the agent sees both alike, as it sees the schema's.
func fieldError(field, message string) error {
	return &adapter.ValidationError{Errors: []adapter.FieldError{{Field: field, Message: message}}}
}

// deref returns *p, or def when p is nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func trimmed(s *string) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	return &t
}
