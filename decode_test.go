package adapter

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

type (
	decodeInner struct {
		Min int    `json:"min"`
		Tag string `json:"tag,omitempty"`
	}
	decodeArgs struct {
		ID    int64       `json:"id"`
		Page  *int        `json:"page"` // a pointer: optional though it has no omitempty
		When  time.Time   `json:"when,omitempty"`
		Sort  string      `json:"sort,omitempty" jsonschema:"enum=name,enum=created_at"`
		Range decodeInner `json:"range,omitempty"`
		Note  *string     `json:"note,omitempty" jsonschema:"nullable"`
	}
	optionalInner struct {
		Q    string `json:"q,omitempty"`
		Page int    `json:"page,omitempty"`
	}
	requiredParentArgs struct {
		Filter optionalInner `json:"filter"` // required; its fields are not
	}
	fieldErrArgs struct {
		N int `json:"n"`
	}
)

func (a fieldErrArgs) Validate() error {
	if a.N < 0 {
		return &FieldError{Field: "n", Message: "must not be negative"}
	}
	return nil
}

func mustCommand[A any](t *testing.T) *command {
	t.Helper()
	c, err := newCommand[A, any]("app", "cmd", "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDecodeNamesEveryBadArgument(t *testing.T) {
	c := mustCommand[decodeArgs](t)
	cases := []struct {
		raw  string
		want []FieldError // nil: decodes
	}{
		{`{"id":1}`, nil},
		{`{"id":1,"note":null}`, nil},
		// page is optional, as a pointer, but not nullable: its schema says
		// integer, and null is none.
		{`{"id":1,"page":null}`, []FieldError{{"page", "must be an integer"}}},
		{`{}`, []FieldError{{"id", "is required"}}},
		{`{"id":null}`, []FieldError{{"id", "must be an integer"}}},
		{`{"id":"x","page":"y","sort":"email","extra":1}`, []FieldError{
			{"extra", "is not an argument of this command"},
			{"id", "must be an integer"},
			{"page", "must be an integer"},
			{"sort", `must be one of "name", "created_at"`},
		}},
		{`{"id":1,"when":"yesterday"}`, []FieldError{{"when", "must be a valid time.Time"}}},
		{`{"id":1,"range":{"min":"low","bogus":1}}`, []FieldError{
			{"bogus", "is not an argument of this command"},
			{"min", "must be an integer"},
		}},
		{`{"id":1,"range":{"min":"low"}}`, []FieldError{{"min", "must be an integer"}}},
		{`[1]`, []FieldError{{"", "arguments must be a JSON object"}}},
	}
	for _, tc := range cases {
		_, err := c.decode([]byte(tc.raw))
		var verr *ValidationError
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v", tc.raw, err)
		case tc.want != nil && (!errors.As(err, &verr) || !slices.Equal(verr.Errors, tc.want)):
			t.Errorf("%s: got %v, want %v", tc.raw, err, tc.want)
		}
	}
}

func TestPointerFieldsAreOptional(t *testing.T) {
	c := mustCommand[decodeArgs](t)
	if c.tmpl == nil || !strings.HasPrefix(c.tmpl.raw, "app://cmd/{id}{?") || !strings.Contains(c.tmpl.raw, "page") {
		t.Errorf("template %v, want id in the path and page in the query", c.tmpl)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(c.schema, &schema); err != nil || !slices.Equal(schema.Required, []string{"id"}) {
		t.Errorf("published required = %v (%v), want [id]", schema.Required, err)
	}
}

func TestRequiredStructWithOptionalFields(t *testing.T) {
	c := mustCommand[requiredParentArgs](t)
	if c.tmpl == nil || c.tmpl.raw != "app://cmd{?page,q}" {
		t.Fatalf("template %+v", c.tmpl)
	}
	for uri, want := range map[string]string{
		"app://cmd":        `{"filter":{}}`,
		"app://cmd?page=2": `{"filter":{"page":2}}`,
	} {
		values, err := c.tmpl.parse(uri)
		if err != nil {
			t.Fatal(err)
		}
		raw, verr := c.tmpl.convert(values)
		if verr != nil || string(raw) != want {
			t.Errorf("%s: %s %v, want %s", uri, raw, verr, want)
			continue
		}
		if _, err := c.decode(raw); err != nil {
			t.Errorf("%s: the rebuilt arguments do not decode: %v", uri, err)
		}
	}
}

func TestValidateMayReturnAFieldErrorPointer(t *testing.T) {
	c := mustCommand[fieldErrArgs](t)
	_, err := c.decode([]byte(`{"n":-1}`))
	var verr *ValidationError
	if !errors.As(err, &verr) || !reflect.DeepEqual(verr.Errors, []FieldError{{"n", "must not be negative"}}) {
		t.Errorf("got %v, want the field kept", err)
	}
}

type emptyErrorArgs struct{}

// Validate makes the common slip of returning &errs rather than errs.Err().
func (emptyErrorArgs) Validate() error { return &ValidationError{} }

func TestAnEmptyValidationErrorPasses(t *testing.T) {
	c := mustCommand[emptyErrorArgs](t)
	if _, err := c.decode([]byte(`{}`)); err != nil {
		t.Errorf("%v, want no error: nothing was named wrong", err)
	}
}

func TestDuplicateKeyErrorNamesTheArgument(t *testing.T) {
	long := strings.Repeat("é", 100)
	for _, tc := range []struct {
		at   []string
		key  string
		want string
	}{
		{nil, "id", `id: is given twice; a JSON object's keys must differ`},
		{[]string{"labels"}, "a", `labels: has the key "a" twice; a JSON object's keys must differ`},
		{[]string{"rows", "2", "tags"}, "x", `rows: item 2/tags has the key "x" twice; a JSON object's keys must differ`},
		{nil, long, strings.Repeat("é", 32) + `…: is given twice; a JSON object's keys must differ`},
		{[]string{long}, long, strings.Repeat("é", 32) + `…: has the key "` + strings.Repeat("é", 32) + `"… twice; a JSON object's keys must differ`},
	} {
		if got := duplicateKeyError(tc.at, tc.key).Errors[0].Error(); got != tc.want {
			t.Errorf("duplicateKeyError(%.20q, %.20q) = %s\nwant %s", tc.at, tc.key, got, tc.want)
		}
	}
}

// FuzzDuplicateKey holds duplicateKey to encoding/json's own tokens: on
// any valid JSON text, it finds a key given twice exactly when the tokens
// show one, and the same key.
// The path to a repeated key comes from the client, as deep as json
// nests: the message stays short however deep it is, naming the argument,
// the first and last steps, and the key.
func TestDuplicateKeyErrorIsBounded(t *testing.T) {
	step := strings.Repeat("s", 200)
	at := []string{"filter"}
	for range 9000 {
		at = append(at, step)
	}
	at = append(at, "last")
	msg := duplicateKeyError(at, "k").Errors[0].Error()
	if len(msg) > 1024 {
		t.Errorf("message of %d bytes, want at most 1 KiB: %.200s…", len(msg), msg)
	}
	for _, want := range []string{"filter: item " + step[:64] + "…/", "/last has the key \"k\" twice"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %.300s… does not say %q", msg, want)
		}
	}
}

type jsonNumberArgs struct {
	Amount json.Number  `json:"amount" jsonschema:"minimum=0"`
	Max    *json.Number `json:"max,omitempty" jsonschema:"exclusiveMaximum=1000"`
	Maybe  *json.Number `json:"maybe,omitempty" jsonschema:"nullable"`
	Filter struct {
		Min json.Number `json:"min,omitempty"`
	} `json:"filter"`
}

// jsonNumberList has no template (a list), only a tool.
type jsonNumberList struct {
	jsonNumberArgs
	List []json.Number `json:"list,omitempty"`
}

// A json.Number field is published as a number, since encoding/json reads
// a JSON number into it, with its jsonschema bounds; through pointers, in
// nested structs and in lists too.
func TestJSONNumberPublishedAsNumber(t *testing.T) {
	c := mustCommand[jsonNumberList](t)
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(c.tool.RawInputSchema, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"amount", `{"type":"number","minimum":0}`},
		{"max", `{"type":"number","exclusiveMaximum":1000}`},
		{"maybe", `{"oneOf":[{"type":"number"},{"type":"null"}]}`},
		{"filter", `{"properties":{"min":{"type":"number"}},"additionalProperties":false,"type":"object"}`},
		{"list", `{"items":{"type":"number"},"type":"array"}`},
	} {
		if got := string(doc.Properties[tc.name]); got != tc.want {
			t.Errorf("%s published as %s, want %s", tc.name, got, tc.want)
		}
	}
	if !slices.Equal(doc.Required, []string{"amount", "filter"}) {
		t.Errorf("required %q, want amount and filter", doc.Required)
	}
}

// A json.Number argument holds the number exactly as written, every digit
// kept, from a tools/call and from a read alike; what the schema does not
// publish (a number in a string) is refused with the field named, on both
// ways in, and the bounds are held exactly.
func TestJSONNumberArrivesAsWritten(t *testing.T) {
	c := mustCommand[jsonNumberArgs](t)
	const long = "12345678901234567890.123456789"
	huge := "1" + strings.Repeat("0", maxNumberScale)
	cases := []struct {
		name      string
		call, uri string // "" where the other way in has no such spelling
		want      json.Number
		wantErr   []FieldError
	}{
		{"every digit kept", `{"amount":` + long + `,"filter":{}}`, "app://cmd/" + long, long, nil},
		{"trailing zeros kept", `{"amount":12.50,"filter":{}}`, "app://cmd/12.50", "12.50", nil},
		{"exponent kept", `{"amount":1E+400,"filter":{}}`, "app://cmd/1E+400", "1E+400", nil},
		{"integer beyond int64", `{"amount":99999999999999999999,"filter":{}}`, "app://cmd/99999999999999999999", "99999999999999999999", nil},
		{"read written in JSON's grammar", "", "app://cmd/007.5", "7.5", nil},
		{"read without a leading zero", "", "app://cmd/.5", "0.5", nil},
		{"a number in a string", `{"amount":"12.5","filter":{}}`, "", "",
			[]FieldError{{Field: "amount", Message: "must be a number"}}},
		{"not a number", "", "app://cmd/abc", "",
			[]FieldError{{Field: "amount", Message: "must be a number"}}},
		{"below the minimum by a little", `{"amount":-0.0000000000000000000000001,"filter":{}}`, "app://cmd/-0.0000000000000000000000001", "",
			[]FieldError{{Field: "amount", Message: "must be at least 0"}}},
		{"at the exclusive maximum, spelled long", `{"amount":1,"max":1000.0000000000000000000,"filter":{}}`, "app://cmd/1?max=1000.0000000000000000000", "",
			[]FieldError{{Field: "max", Message: "must be less than 1000"}}},
		{"out of scale", `{"amount":` + huge + `,"filter":{}}`, "app://cmd/" + huge, "",
			[]FieldError{{Field: "amount", Message: outOfScaleMessage}}},
		{"exponent out of scale", `{"amount":1e1001,"filter":{}}`, "app://cmd/1e1001", "",
			[]FieldError{{Field: "amount", Message: outOfScaleMessage}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(way string, got any, err error) {
				t.Helper()
				var errs []FieldError
				if err != nil {
					errs = asValidationError(err).Errors
				}
				if tc.wantErr != nil || errs != nil {
					if !slices.Equal(errs, tc.wantErr) {
						t.Errorf("%s: %v, want %v", way, errs, tc.wantErr)
					}
					return
				}
				if n := got.(jsonNumberArgs).Amount; n != tc.want {
					t.Errorf("%s ran with amount %q, want %q", way, n, tc.want)
				}
			}
			if tc.call != "" {
				got, err := c.decode([]byte(tc.call))
				check("tools/call "+tc.call, got, err)
			}
			if tc.uri != "" {
				values, err := c.tmpl.parse(tc.uri)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := c.argsFromURI(values)
				var got any
				if err == nil {
					got, err = c.decode(raw)
				}
				check("read "+tc.uri, got, err)
			}
		})
	}
}

// A json.Number in a struct argument, flattened into the template, keeps
// every digit on a read as on a tools/call.
func TestNestedJSONNumberArrivesAsWritten(t *testing.T) {
	c := mustCommand[jsonNumberArgs](t)
	const long = "0.10000000000000000000000001"
	values, err := c.tmpl.parse("app://cmd/1?min=" + long)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.argsFromURI(values)
	if err != nil {
		t.Fatal(err)
	}
	for way, args := range map[string]string{"read": string(raw), "tools/call": `{"amount":1,"filter":{"min":` + long + `}}`} {
		got, err := c.decode([]byte(args))
		if err != nil {
			t.Fatalf("%s: %v", way, err)
		}
		if n := got.(jsonNumberArgs).Filter.Min; n != long {
			t.Errorf("%s ran with filter.min %q, want %q", way, n, long)
		}
	}
}

// A completer gets a json.Number variable as the json.Number a read would
// run with, not a float64 that rounds it.
func TestTypedArgumentsOfAJSONNumberVariable(t *testing.T) {
	c := mustCommand[jsonNumberArgs](t)
	for _, tc := range []struct {
		s    string
		want any
	}{
		{"12345678901234567890.123456789", json.Number("12345678901234567890.123456789")},
		{".5", json.Number("0.5")},
		{"abc", "abc"},
	} {
		got := c.tmpl.typedArguments(map[string]string{"amount": tc.s})["amount"]
		if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", tc.want, tc.want) {
			t.Errorf("amount=%s: completer gets %T %v, want %T %v", tc.s, got, got, tc.want, tc.want)
		}
	}
}

type jsonNumberOrString struct {
	N json.Number `json:"n" jsonschema:"oneof_type=number;string"`
}

// A json.Number takes a number in a string only where its schema says so;
// what Go then refuses is told as what Go wants, a number.
func TestJSONNumberInAStringByChoice(t *testing.T) {
	c := mustCommand[jsonNumberOrString](t)
	for _, tc := range []struct {
		raw     string
		want    json.Number
		wantErr []FieldError
	}{
		{`{"n":"12.50"}`, "12.50", nil},
		{`{"n":12.50}`, "12.50", nil},
		{`{"n":"abc"}`, "", []FieldError{{Field: "n", Message: "must be a number"}}},
	} {
		got, err := c.decode([]byte(tc.raw))
		if tc.wantErr != nil {
			wantDecodeErrors(t, c, tc.raw, tc.wantErr)
			continue
		}
		if err != nil || got.(jsonNumberOrString).N != tc.want {
			t.Errorf("%s: %#v, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

type jsonNumberQuoted struct {
	N json.Number `json:"n,string"`
}

// json's ",string" option on a json.Number makes encoding/json read a
// number written as a string ("12.50"), which the schema then publishes;
// not a string inside a string, as on a plain string field.
func TestJSONNumberWithStringOption(t *testing.T) {
	c := mustCommand[jsonNumberQuoted](t)
	if got, want := string(c.tool.RawInputSchema), `{"properties":{"n":{"type":"string"}},"additionalProperties":false,"type":"object","required":["n"]}`; got != want {
		t.Errorf("published %s, want %s", got, want)
	}
	for _, tc := range []struct {
		call, uri string
		want      json.Number
		wantErr   []FieldError
	}{
		{`{"n":"12.50"}`, "app://cmd/12.50", "12.50", nil},
		{`{"n":"abc"}`, "app://cmd/abc", "", []FieldError{{Field: "n", Message: "must be a number written as a string"}}},
		{`{"n":12.5}`, "", "", []FieldError{{Field: "n", Message: "must be a string"}}},
	} {
		values, err := c.tmpl.parse(cmp.Or(tc.uri, "app://cmd/x"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := c.argsFromURI(values)
		if err == nil {
			_, err = c.decode(raw)
		}
		readErr := err
		got, err := c.decode([]byte(tc.call))
		if tc.wantErr != nil {
			wantDecodeErrors(t, c, tc.call, tc.wantErr)
			if tc.uri != "" && fmt.Sprint(readErr) != fmt.Sprint(&ValidationError{Errors: tc.wantErr}) {
				t.Errorf("read %s: %v, want %v", tc.uri, readErr, tc.wantErr)
			}
			continue
		}
		if err != nil || got.(jsonNumberQuoted).N != tc.want {
			t.Errorf("%s: %#v, %v; want %q", tc.call, got, err, tc.want)
		}
		if readErr != nil {
			t.Errorf("read %s: %v", tc.uri, readErr)
		}
	}
}
