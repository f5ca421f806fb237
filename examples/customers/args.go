package main

import (
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// The arguments of each command are a struct. The adapter publishes its JSON
// schema (reflected by invopop/jsonschema) as the tool's input schema, derives
// the URI template from that same schema, and holds every tools/call and
// every read to all of it:
//
//   - a field without omitempty is required: a path segment of the template;
//   - a field with omitempty is optional: a query parameter. Use a pointer
//     when the zero value is something a caller could send on purpose, so
//     that "page=0" is refused rather than taken for "no page given";
//   - a named string type with a JSONSchema method is an enum, which the
//     adapter checks and offers in completion;
//   - jsonschema tags state bounds (minimum, maximum), lengths (minLength,
//     maxLength), patterns, formats (date, email...) and list sizes
//     (minItems, maxItems), and the adapter enforces each one;
//   - jsonschema_description describes a field to agents (it may contain
//     commas, which the jsonschema tag cannot).
//
// So a Validate method keeps only what a schema cannot say, such as an
// order between two fields. It runs after the schema's checks, on every
// tools/call and every read; the agent gets its errors together with the
// schema's in one answer.

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
	Search    string    `json:"search,omitempty" jsonschema_description:"Text to find in the name or email, ignoring case." jsonschema:"maxLength=200,pattern=^[^\\x00]*$"`
	Sort      SortKey   `json:"sort,omitempty" jsonschema_description:"What to sort by (default name)."`
	Direction Direction `json:"direction,omitempty" jsonschema_description:"Sort order (default asc)."`
	Page      *int      `json:"page,omitempty" jsonschema_description:"Page number from 1 (default 1)." jsonschema:"minimum=1"`
	PerPage   *int      `json:"per_page,omitempty" jsonschema_description:"Customers per page from 1 to 100 (default 20)." jsonschema:"minimum=1,maximum=100"`
}

// maxPerPage bounds how much one read can return; the schema of per_page
// states it.
const maxPerPage = 100

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

// Validate checks what the schema cannot say: that the days are in order.
// The schema already made both dates (format "date"); a date that failed
// it is left out, and then there is nothing to compare.
func (a OrdersBetweenArgs) Validate() error {
	from, err1 := time.Parse(time.DateOnly, a.From)
	to, err2 := time.Parse(time.DateOnly, a.To)
	if err1 == nil && err2 == nil && from.After(to) {
		return fieldError("to", "must not be before from")
	}
	return nil
}

// ExportArgs are the (no) arguments of customers_export.
type ExportArgs struct{}

// ByIDsArgs are the arguments of customers_by_ids. A list cannot be a URI
// template variable, so this command is a tool only.
type ByIDsArgs struct {
	IDs []int64 `json:"ids" jsonschema_description:"The ids of the customers to return (1 to 100)." jsonschema:"minItems=1,maxItems=100"`
}

// CreateCustomerArgs are the arguments of customers_create. A name is not
// blank: it has a character that is not a space (the pattern's \s, and
// Validate for the rest of Unicode's spaces). A name or search does not
// hold the character NUL (\x00), which PostgreSQL's text cannot store or
// compare: refused by the schema, it is a field error on both databases
// rather than an internal error on one. Nor does an email: format "email"
// refuses NUL only outside quotes ("n\x00l"@example.com passes it), so
// the email has the pattern too.
type CreateCustomerArgs struct {
	Name  string `json:"name" jsonschema_description:"Full name; not blank." jsonschema:"minLength=1,maxLength=200,pattern=^[^\\x00]*[^\\s\\x00][^\\x00]*$"`
	Email string `json:"email" jsonschema_description:"Email address; no two customers share one." jsonschema:"format=email,maxLength=254,pattern=^[^\\x00]*$"`
}

// Validate checks that the name is not blank. The pattern says so only
// for ASCII white space (its \s), but customers_create trims all that
// unicode.IsSpace calls space, and a name of a no-break space would be
// stored as "".
func (a CreateCustomerArgs) Validate() error {
	if isBlank(a.Name) {
		return fieldError("name", nameBlank)
	}
	return nil
}

// isBlank reports whether s is nothing once trimmed as the commands trim it.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

const nameBlank = "must not be blank"

// UpdateCustomerArgs are the arguments of customers_update. A field left out
// keeps its value.
type UpdateCustomerArgs struct {
	ID    int64   `json:"id" jsonschema_description:"The customer's id."`
	Name  *string `json:"name,omitempty" jsonschema_description:"New full name; not blank." jsonschema:"minLength=1,maxLength=200,pattern=^[^\\x00]*[^\\s\\x00][^\\x00]*$"`
	Email *string `json:"email,omitempty" jsonschema_description:"New email address." jsonschema:"format=email,maxLength=254,pattern=^[^\\x00]*$"`
}

// Validate checks what the schema's tags cannot say: that there is something
// to change, and that a new name is not blank (see CreateCustomerArgs).
func (a UpdateCustomerArgs) Validate() error {
	switch {
	case a.Name == nil && a.Email == nil:
		return fieldError("", "give a name, an email or both")
	case a.Name != nil && isBlank(*a.Name):
		return fieldError("name", nameBlank)
	}
	return nil
}

// CreateOrderArgs are the arguments of orders_create. The schema says all
// there is to check.
type CreateOrderArgs struct {
	CustomerID  int64       `json:"customer_id" jsonschema_description:"The customer who placed the order."`
	AmountCents int64       `json:"amount_cents" jsonschema_description:"Amount in cents, from 1 to 1e12." jsonschema:"minimum=1,maximum=1000000000000"`
	Status      OrderStatus `json:"status" jsonschema_description:"Where the order stands."`
	PlacedOn    string      `json:"placed_on" jsonschema_description:"Day the order was placed (YYYY-MM-DD)." jsonschema:"format=date"`
}

// maxAmountCents is the largest amount of an order; the schema of
// amount_cents states it. Without it two orders of 2^62 cents add up to a
// negative total in orders_between. With it a total overflows only past
// nine million orders in one range, whose answer, which lists them all,
// would be far too large to send anyway. Every amount stays below 2^53,
// exact as a JSON number in JavaScript too, and so does a total of up to
// 9,007 orders.
const maxAmountCents = 1_000_000_000_000
