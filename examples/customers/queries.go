package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Customer is one row of the customers table, as commands return it.
type Customer struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	CreatedAt string `json:"created_at"` // RFC 3339, UTC
}

// Order is one row of the orders table, as commands return it.
type Order struct {
	ID          int64  `json:"id"`
	CustomerID  int64  `json:"customer_id"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"`
	PlacedOn    string `json:"placed_on"` // YYYY-MM-DD
}

// Errors the store returns for broken constraints, so that commands can name
// the argument at fault instead of passing on a database message.
var (
	errEmailTaken = errors.New("email already belongs to another customer")
	errNoCustomer = errors.New("no such customer")
)

// customerPage asks for one page of customers.
type customerPage struct {
	Search string // substring of name or email, ignoring case (foldCase); "" for all
	SortBy string // "name" (ignoring case) or "created_at"
	Desc   bool
	Limit  int
	Offset int
}

// sortColumns maps a sort key to its ORDER BY clause. Only these fixed
// strings ever reach the SQL text; user input travels as parameters. The id
// breaks ties so that pages never overlap or skip a row.
func sortColumns(by string, desc bool) (string, error) {
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	switch by {
	case "name":
		return "name_folded " + dir + ", id " + dir, nil
	case "created_at":
		return "created_at " + dir + ", id " + dir, nil
	}
	return "", fmt.Errorf("cannot sort customers by %q", by)
}

// listCustomers returns one page of the customers matching p, and how many
// match in all. Both come from one read transaction, so they agree.
func (s *store) listCustomers(ctx context.Context, p customerPage) ([]Customer, int, error) {
	order, err := sortColumns(p.SortBy, p.Desc)
	if err != nil {
		return nil, 0, err
	}
	// Repeatable read: PostgreSQL's statements would otherwise each see the
	// latest commits; SQLite's transactions always read one snapshot.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, 0, fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback() // a read-only transaction has nothing to commit

	// instr (strpos) instead of LIKE: the search is a literal, so '%' and
	// '_' in it must not act as wildcards. The folded columns and the folded
	// search make it ignore case, the same way on both databases (fold.go).
	match := fmt.Sprintf(`(?1 = '' OR %[1]s(name_folded, ?1) > 0 OR %[1]s(email_folded, ?1) > 0)`, s.d.instr)
	search := foldCase(p.Search)

	var total int
	if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT count(*) FROM customers WHERE `+match), search).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count customers: %w", err)
	}
	rows, err := tx.QueryContext(ctx,
		s.d.rebind(`SELECT id, name, email, created_at FROM customers WHERE `+match+
			` ORDER BY `+order+` LIMIT ?2 OFFSET ?3`),
		search, p.Limit, p.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list customers: %w", err)
	}
	customers, err := scanCustomers(rows)
	return customers, total, err
}

// customer returns the customer with the given id, or an error wrapping
// sql.ErrNoRows.
func (s *store) customer(ctx context.Context, id int64) (Customer, error) {
	var c Customer
	err := s.db.QueryRowContext(ctx,
		s.d.rebind(`SELECT id, name, email, created_at FROM customers WHERE id = ?`), id,
	).Scan(&c.ID, &c.Name, &c.Email, asText(&c.CreatedAt, time.RFC3339))
	if err != nil {
		return Customer{}, fmt.Errorf("customer %d: %w", id, err)
	}
	return c, nil
}

// customersByIDs returns the customers among ids that exist, in id order.
func (s *store) customersByIDs(ctx context.Context, ids []int64) ([]Customer, error) {
	// One parameter for any number of ids: SQLite's json_each (PostgreSQL's
	// json_array_elements_text) unpacks a JSON array, which avoids building
	// a "?, ?, ?" list by hand.
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx,
		s.d.rebind(`SELECT id, name, email, created_at FROM customers
		 WHERE id IN (`+s.d.idsIn+`) ORDER BY id`),
		string(list))
	if err != nil {
		return nil, fmt.Errorf("customers by id: %w", err)
	}
	return scanCustomers(rows)
}

// allCustomers returns every customer in id order.
func (s *store) allCustomers(ctx context.Context) ([]Customer, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, email, created_at FROM customers ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("all customers: %w", err)
	}
	return scanCustomers(rows)
}

// scanCustomers reads and closes rows. The slice is never nil, so that an
// empty result is the JSON [] rather than null.
func scanCustomers(rows *sql.Rows) ([]Customer, error) {
	defer rows.Close()
	customers := []Customer{}
	for rows.Next() {
		var c Customer
		if err := rows.Scan(&c.ID, &c.Name, &c.Email, asText(&c.CreatedAt, time.RFC3339)); err != nil {
			return nil, fmt.Errorf("scan customer: %w", err)
		}
		customers = append(customers, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read customers: %w", err)
	}
	return customers, nil
}

// ordersBetween returns the orders placed from from to to (both YYYY-MM-DD,
// inclusive), with the given status unless status is "", by date then id.
func (s *store) ordersBetween(ctx context.Context, from, to, status string) ([]Order, error) {
	rows, err := s.db.QueryContext(ctx,
		s.d.rebind(`SELECT id, customer_id, amount_cents, status, placed_on FROM orders
		 WHERE placed_on BETWEEN ?1 AND ?2 AND (?3 = '' OR status = ?3)
		 ORDER BY placed_on, id`),
		from, to, status)
	if err != nil {
		return nil, fmt.Errorf("orders between %s and %s: %w", from, to, err)
	}
	defer rows.Close()
	orders := []Order{}
	for rows.Next() {
		var o Order
		if err := rows.Scan(&o.ID, &o.CustomerID, &o.AmountCents, &o.Status, asText(&o.PlacedOn, time.DateOnly)); err != nil {
			return nil, fmt.Errorf("scan order: %w", err)
		}
		orders = append(orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	return orders, nil
}

// orderRange is one range of ordersBetweenMany: the arguments of
// ordersBetween.
type orderRange struct {
	From, To, Status string
}

// ordersBetweenMany returns, for each range, what ordersBetween would, in
// one query: the ranges are the rows of a VALUES list, each with its index,
// joined with the orders they hold.
func (s *store) ordersBetweenMany(ctx context.Context, ranges []orderRange) ([][]Order, error) {
	rows := make([]string, len(ranges))
	params := make([]any, 0, 3*len(ranges))
	for i, r := range ranges {
		// The index is the loop's, never input; the values are parameters.
		rows[i] = fmt.Sprintf("(%d, %s, %s, %s)", i, s.d.typed("date"), s.d.typed("date"), s.d.typed("text"))
		params = append(params, r.From, r.To, r.Status)
	}
	res, err := s.db.QueryContext(ctx,
		s.d.rebind(`WITH ranges (i, from_day, to_day, status) AS (VALUES `+strings.Join(rows, ", ")+`)
		 SELECT ranges.i, o.id, o.customer_id, o.amount_cents, o.status, o.placed_on
		 FROM ranges JOIN orders o ON o.placed_on BETWEEN ranges.from_day AND ranges.to_day
		  AND (ranges.status = '' OR o.status = ranges.status)
		 ORDER BY ranges.i, o.placed_on, o.id`),
		params...)
	if err != nil {
		return nil, fmt.Errorf("orders of %d ranges: %w", len(ranges), err)
	}
	defer res.Close()
	lists := make([][]Order, len(ranges))
	for i := range lists {
		lists[i] = []Order{}
	}
	for res.Next() {
		var i int
		var o Order
		if err := res.Scan(&i, &o.ID, &o.CustomerID, &o.AmountCents, &o.Status, asText(&o.PlacedOn, time.DateOnly)); err != nil {
			return nil, fmt.Errorf("scan order: %w", err)
		}
		lists[i] = append(lists[i], o)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	return lists, nil
}

// createCustomer inserts a customer and returns it. A taken email is
// errEmailTaken.
func (s *store) createCustomer(ctx context.Context, name, email string, now time.Time) (Customer, error) {
	var c Customer
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx,
			s.d.rebind(`INSERT INTO customers (name, email, created_at) VALUES (?, ?, ?)
			 RETURNING id, name, email, created_at`),
			name, email, now.UTC().Format(time.RFC3339),
		).Scan(&c.ID, &c.Name, &c.Email, asText(&c.CreatedAt, time.RFC3339))
	})
	if err != nil {
		return Customer{}, constraintError(fmt.Errorf("create customer: %w", err))
	}
	return c, nil
}

// updateCustomer changes the name and/or email of customer id; a nil pointer
// keeps the current value. An unknown id is an error wrapping sql.ErrNoRows,
// a taken email errEmailTaken.
func (s *store) updateCustomer(ctx context.Context, id int64, name, email *string) (Customer, error) {
	var c Customer
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx,
			s.d.rebind(`UPDATE customers SET name = coalesce(?, name), email = coalesce(?, email)
			 WHERE id = ? RETURNING id, name, email, created_at`),
			name, email, id,
		).Scan(&c.ID, &c.Name, &c.Email, asText(&c.CreatedAt, time.RFC3339))
	})
	if err != nil {
		return Customer{}, constraintError(fmt.Errorf("update customer %d: %w", id, err))
	}
	return c, nil
}

// createOrder inserts an order and returns it. An unknown customer is
// errNoCustomer.
func (s *store) createOrder(ctx context.Context, o Order) (Order, error) {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx,
			s.d.rebind(`INSERT INTO orders (customer_id, amount_cents, status, placed_on) VALUES (?, ?, ?, ?)
			 RETURNING id`),
			o.CustomerID, o.AmountCents, o.Status, o.PlacedOn,
		).Scan(&o.ID)
	})
	if err != nil {
		return Order{}, constraintError(fmt.Errorf("create order: %w", err))
	}
	return o, nil
}
