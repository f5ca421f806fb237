package adapter

import (
	"encoding/json"
	"errors"
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
