package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/mcplive/adapter"
)

// The arguments of each command are a struct. The adapter publishes its JSON
// schema (reflected by invopop/jsonschema) as the tool's input schema and
// derives the URI template from that same schema:
//
//   - a field without omitempty is required: a path segment of the template;
//   - a field with omitempty is optional: a query parameter. Use a pointer
//     when the zero value is something a caller could send on purpose, so
//     that "page=0" is an error rather than "no page given";
//   - a named string type with a JSONSchema method is an enum, which the
//     adapter checks when it converts a URI and offers in completion;
//   - jsonschema_description describes a field to agents (it may contain
//     commas, which the jsonschema tag cannot).
//
// Each type's Validate method runs on every tools/call and every read, after
// the adapter decoded the arguments; it reports every bad field at once. It
// checks the enums too, since a tools/call's JSON is decoded as Go would
// decode it, and Go lets any string into a string type.

// SortKey is what customers_index sorts by.
type SortKey string

const (
	SortByName      SortKey = "name"
	SortByCreatedAt SortKey = "created_at"
)

func sortKeys() []SortKey { return []SortKey{SortByName, SortByCreatedAt} }

func (SortKey) JSONSchema() *jsonschema.Schema { return enumSchema(sortKeys()) }

// Direction is the order of a sort.
type Direction string

const (
	Ascending  Direction = "asc"
	Descending Direction = "desc"
)

func directions() []Direction { return []Direction{Ascending, Descending} }

func (Direction) JSONSchema() *jsonschema.Schema { return enumSchema(directions()) }

// OrderStatus is where an order stands. The orders table checks the same
// three values.
type OrderStatus string

const (
	StatusOpen      OrderStatus = "open"
	StatusPaid      OrderStatus = "paid"
	StatusCancelled OrderStatus = "cancelled"
)

func orderStatuses() []OrderStatus { return []OrderStatus{StatusOpen, StatusPaid, StatusCancelled} }

func (OrderStatus) JSONSchema() *jsonschema.Schema { return enumSchema(orderStatuses()) }

// enumSchema is the schema of a string that must be one of values.
func enumSchema[T ~string](values []T) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, string(v))
	}
	return s
}

// IndexArgs are the arguments of customers_index. All are optional, so the
// command also has the plain resource app://customers_index.
type IndexArgs struct {
	Search    string    `json:"search,omitempty" jsonschema_description:"Text to find in the name or email, ignoring case."`
	Sort      SortKey   `json:"sort,omitempty" jsonschema_description:"What to sort by (default name)."`
	Direction Direction `json:"direction,omitempty" jsonschema_description:"Sort order (default asc)."`
	Page      *int      `json:"page,omitempty" jsonschema_description:"Page number from 1 (default 1)." jsonschema:"minimum=1"`
	PerPage   *int      `json:"per_page,omitempty" jsonschema_description:"Customers per page from 1 to 100 (default 20)." jsonschema:"minimum=1,maximum=100"`
}

// maxPerPage bounds how much one read can return.
const maxPerPage = 100

func (a IndexArgs) Validate() error {
	var p problems
	if len(a.Search) > 200 {
		p.add("search", "must be at most 200 bytes")
	}
	if a.Sort != "" {
		checkEnum(&p, "sort", a.Sort, sortKeys())
	}
	if a.Direction != "" {
		checkEnum(&p, "direction", a.Direction, directions())
	}
	if a.Page != nil && *a.Page < 1 {
		p.add("page", "must be 1 or more")
	}
	if a.PerPage != nil && (*a.PerPage < 1 || *a.PerPage > maxPerPage) {
		p.add("per_page", fmt.Sprintf("must be between 1 and %d", maxPerPage))
	}
	return p.err()
}

// ShowArgs are the arguments of customers_show: app://customers_show/{id}.
type ShowArgs struct {
	ID int64 `json:"id" jsonschema_description:"The customer's id."`
}

// OrdersBetweenArgs are the arguments of orders_between:
// app://orders_between/{from}/{to}{?status}.
type OrdersBetweenArgs struct {
	From   string      `json:"from" jsonschema_description:"First day (YYYY-MM-DD)." jsonschema:"format=date"`
	To     string      `json:"to" jsonschema_description:"Last day (YYYY-MM-DD) included." jsonschema:"format=date"`
	Status OrderStatus `json:"status,omitempty" jsonschema_description:"Only orders with this status."`
}

func (a OrdersBetweenArgs) Validate() error {
	var p problems
	from, fromOK := p.date("from", a.From)
	to, toOK := p.date("to", a.To)
	if fromOK && toOK && from.After(to) {
		p.add("to", "must not be before from")
	}
	if a.Status != "" {
		checkEnum(&p, "status", a.Status, orderStatuses())
	}
	return p.err()
}

// ExportArgs are the (no) arguments of customers_export.
type ExportArgs struct{}

// ByIDsArgs are the arguments of customers_by_ids. A list cannot be a URI
// template variable, so this command is a tool only.
type ByIDsArgs struct {
	IDs []int64 `json:"ids" jsonschema_description:"The ids of the customers to return (1 to 100)." jsonschema:"minItems=1,maxItems=100"`
}

func (a ByIDsArgs) Validate() error {
	var p problems
	if len(a.IDs) == 0 || len(a.IDs) > maxPerPage {
		p.add("ids", fmt.Sprintf("must list between 1 and %d ids", maxPerPage))
	}
	return p.err()
}

// CreateCustomerArgs are the arguments of customers_create.
type CreateCustomerArgs struct {
	Name  string `json:"name" jsonschema_description:"Full name."`
	Email string `json:"email" jsonschema_description:"Email address; no two customers share one."`
}

func (a CreateCustomerArgs) Validate() error {
	var p problems
	p.name("name", a.Name)
	p.email("email", a.Email)
	return p.err()
}

// UpdateCustomerArgs are the arguments of customers_update. A field left out
// keeps its value.
type UpdateCustomerArgs struct {
	ID    int64   `json:"id" jsonschema_description:"The customer's id."`
	Name  *string `json:"name,omitempty" jsonschema_description:"New full name."`
	Email *string `json:"email,omitempty" jsonschema_description:"New email address."`
}

func (a UpdateCustomerArgs) Validate() error {
	var p problems
	if a.Name == nil && a.Email == nil {
		p.add("", "give a name, an email or both")
	}
	if a.Name != nil {
		p.name("name", *a.Name)
	}
	if a.Email != nil {
		p.email("email", *a.Email)
	}
	return p.err()
}

// CreateOrderArgs are the arguments of orders_create.
type CreateOrderArgs struct {
	CustomerID  int64       `json:"customer_id" jsonschema_description:"The customer who placed the order."`
	AmountCents int64       `json:"amount_cents" jsonschema_description:"Amount in cents; more than 0." jsonschema:"minimum=1"`
	Status      OrderStatus `json:"status" jsonschema_description:"Where the order stands."`
	PlacedOn    string      `json:"placed_on" jsonschema_description:"Day the order was placed (YYYY-MM-DD)." jsonschema:"format=date"`
}

func (a CreateOrderArgs) Validate() error {
	var p problems
	if a.AmountCents <= 0 {
		p.add("amount_cents", "must be more than 0")
	}
	checkEnum(&p, "status", a.Status, orderStatuses())
	p.date("placed_on", a.PlacedOn)
	return p.err()
}

// problems collects field errors, so that Validate reports them all at once.
type problems []adapter.FieldError

func (p *problems) add(field, message string) {
	*p = append(*p, adapter.FieldError{Field: field, Message: message})
}

// err is nil when nothing was added. (Returning a nil *ValidationError as an
// error would make a non-nil error.)
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &adapter.ValidationError{Errors: p}
}

// date checks a YYYY-MM-DD date and returns it.
func (p *problems) date(field, s string) (time.Time, bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		p.add(field, "must be a date like 2024-05-31")
		return time.Time{}, false
	}
	return t, true
}

// checkEnum adds a problem unless v is one of values. (A function, not a
// method of problems: methods cannot have type parameters.)
func checkEnum[T ~string](p *problems, field string, v T, values []T) {
	if slices.Contains(values, v) {
		return
	}
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	p.add(field, "must be one of "+strings.Join(quoted, ", "))
}

func (p *problems) name(field, s string) {
	switch n := len(strings.TrimSpace(s)); {
	case n == 0:
		p.add(field, "must not be empty")
	case n > 200:
		p.add(field, "must be at most 200 bytes")
	}
}

// email is deliberately lenient: something, an @, something. Whether the
// address exists only a sent message can tell.
func (p *problems) email(field, s string) {
	local, domain, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok || local == "" || domain == "" || strings.ContainsAny(s, " \t\r\n") {
		p.add(field, "must be an email address like ada@example.com")
	} else if len(s) > 254 {
		p.add(field, "must be at most 254 bytes")
	}
}
