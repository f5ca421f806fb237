package adapter

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/invopop/jsonschema"
)

type direction string

func (direction) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"asc", "desc"}}
}

type (
	argsShow struct {
		ID int64 `json:"id"`
	}
	argsIndex struct {
		Search    *string   `json:"search,omitempty"`
		Sort      string    `json:"sort,omitempty" jsonschema:"enum=name,enum=created_at"`
		Direction direction `json:"direction,omitempty"`
		Page      *int      `json:"page,omitempty"`
		PerPage   *int      `json:"per_page,omitempty"`
	}
	argsBetween struct {
		To     string `json:"to"`
		From   string `json:"from"`
		Status string `json:"status,omitempty" jsonschema:"enum=open,enum=paid,enum=cancelled"`
	}
	argsEmpty  struct{}
	rangeInner struct {
		Min int     `json:"min"`
		Max *int    `json:"max,omitempty"`
		Tag *string `json:"tag,omitempty"`
	}
	argsFlat struct {
		Range rangeInner `json:"range"`
		Name  string     `json:"name"`
	}
	argsFlatOptional struct {
		Range *rangeInner `json:"range,omitempty"`
	}
	argsNested struct {
		Outer struct {
			Inner rangeInner `json:"inner"`
		} `json:"outer"`
	}
	argsList struct {
		IDs []int64 `json:"ids"`
	}
	argsMap struct {
		Labels map[string]string `json:"labels"`
	}
	argsAny struct {
		V any `json:"v"`
	}
	argsRaw struct {
		V json.RawMessage `json:"v"`
	}
	argsDup struct {
		Min   int        `json:"min"`
		Range rangeInner `json:"range"`
	}
	argsBadName struct {
		PerPage int `json:"per-page"`
	}
	argsScalars struct {
		B  bool     `json:"b"`
		F  float64  `json:"f"`
		F2 *float32 `json:"f2,omitempty"`
		U8 uint8    `json:"u8"`
		N  *int     `json:"n,omitempty" jsonschema:"nullable"`
		S  string   `json:"s"`
	}
	embedded struct {
		Page int `json:"page,omitempty"`
	}
	argsEmbedded struct {
		embedded
		ID int `json:"id"`
	}
	argsNestedList struct {
		Range struct {
			Values []int `json:"values"`
		} `json:"range"`
	}
)

func derive[A any](t *testing.T) (*uriTemplate, Reason, string) {
	t.Helper()
	c, err := newCommand[A, any]("app", "cmd", "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.tmpl, c.reason, c.detail
}

func TestDeriveTemplate(t *testing.T) {
	cases := []struct {
		name     string
		derive   func(*testing.T) (*uriTemplate, Reason, string)
		template string
		reason   Reason
		detail   string
	}{
		{"required integer is a path segment", derive[argsShow], "app://cmd/{id}", "", ""},
		{"all optional in the query, name order", derive[argsIndex], "app://cmd{?direction,page,per_page,search,sort}", "", ""},
		{"required in name order, then optional", derive[argsBetween], "app://cmd/{from}/{to}{?status}", "", ""},
		{"no arguments at all", derive[argsEmpty], "app://cmd", "", ""},
		{"struct flattened one level", derive[argsFlat], "app://cmd/{min}/{name}{?max,tag}", "", ""},
		{"optional struct: its fields are optional", derive[argsFlatOptional], "app://cmd{?max,min,tag}", "", ""},
		{"every scalar kind", derive[argsScalars], "app://cmd/{b}/{f}/{s}/{u8}{?f2,n}", "", ""},
		{"embedded struct fields are promoted", derive[argsEmbedded], "app://cmd/{id}{?page}", "", ""},
		{"struct nested two levels", derive[argsNested], "", ReasonNestedStruct, "outer.inner"},
		{"list", derive[argsList], "", ReasonList, "ids"},
		{"list inside a struct", derive[argsNestedList], "", ReasonList, "range.values"},
		{"map", derive[argsMap], "", ReasonMap, "labels"},
		{"interface", derive[argsAny], "", ReasonAny, "v"},
		{"raw JSON", derive[argsRaw], "", ReasonRawJSON, "v"},
		{"duplicate variable", derive[argsDup], "", ReasonDuplicateVariable, "min"},
		{"name not allowed in a template", derive[argsBadName], "", ReasonVariableName, "per-page"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, reason, detail := tc.derive(t)
			got := ""
			if tmpl != nil {
				got = tmpl.raw
			}
			if got != tc.template || reason != tc.reason || detail != tc.detail {
				t.Errorf("got template %q reason %q detail %q, want %q %q %q", got, reason, detail, tc.template, tc.reason, tc.detail)
			}
		})
	}
}

func TestDeriveTemplateVariables(t *testing.T) {
	tmpl, _, _ := derive[argsScalars](t)
	want := map[string]variable{
		"b":  {name: "b", kind: kindBoolean, required: true, goKind: reflect.Bool},
		"f":  {name: "f", kind: kindNumber, required: true, goKind: reflect.Float64},
		"s":  {name: "s", kind: kindString, required: true, goKind: reflect.String},
		"u8": {name: "u8", kind: kindInteger, required: true, goKind: reflect.Uint8},
		"f2": {name: "f2", kind: kindNumber, goKind: reflect.Float32},
		"n":  {name: "n", kind: kindInteger, nullable: true, goKind: reflect.Int},
	}
	for name, w := range want {
		got := tmpl.variable(name)
		if got == nil || !reflect.DeepEqual(*got, w) {
			t.Errorf("variable %s = %+v, want %+v", name, got, w)
		}
	}
	idx, _, _ := derive[argsIndex](t)
	if v := idx.variable("direction"); v == nil || v.kind != kindEnum || !reflect.DeepEqual(v.enum, []string{"asc", "desc"}) {
		t.Errorf("direction = %+v, want an enum of asc, desc", v)
	}
	flat, _, _ := derive[argsFlat](t)
	if v := flat.variable("min"); v == nil || v.parent != "range" || !v.required {
		t.Errorf("min = %+v, want a required variable of range", v)
	}
}

// The template must not depend on map order anywhere: derive it many times.
func TestDeriveTemplateIsStable(t *testing.T) {
	first, _, _ := derive[argsIndex](t)
	flat, _, _ := derive[argsFlat](t)
	for range 100 {
		if got, _, _ := derive[argsIndex](t); got.raw != first.raw {
			t.Fatalf("template changed between runs: %q then %q", first.raw, got.raw)
		}
		if got, _, _ := derive[argsFlat](t); !reflect.DeepEqual(got, flat) {
			t.Fatalf("flattened template changed between runs: %+v then %+v", flat, got)
		}
	}
}

func TestScalarSchemas(t *testing.T) {
	cases := []struct {
		schema   string
		kind     varKind
		nullable bool
		ok       bool
	}{
		{`{"type":"string"}`, kindString, false, true},
		{`{"type":["integer","null"]}`, kindInteger, true, true},
		{`{"oneOf":[{"type":"number"},{"type":"null"}]}`, kindNumber, true, true},
		{`{"anyOf":[{"type":"null"},{"type":"boolean"}]}`, kindBoolean, true, true},
		{`{"enum":["a","b"]}`, kindEnum, false, true},
		{`{"type":"string","enum":["a",null]}`, kindEnum, true, true},
		{`{"enum":[1,2]}`, 0, false, false},
		{`{"type":["string","integer"]}`, 0, false, false},
		{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, 0, false, false},
		{`{"type":"array","items":{"type":"string"}}`, 0, false, false},
		{`{"type":"object"}`, 0, false, false},
		{`true`, 0, false, false},
	}
	for _, tc := range cases {
		n, err := parseSchema(json.RawMessage(tc.schema))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		kind, _, nullable, ok := n.scalar()
		if ok != tc.ok || ok && (kind != tc.kind || nullable != tc.nullable) {
			t.Errorf("%s: got %v nullable=%v ok=%v, want %v %v %v", tc.schema, kind, nullable, ok, tc.kind, tc.nullable, tc.ok)
		}
	}
}

type typedCompletionArgs struct {
	F float64 `json:"f" jsonschema:"type=integer"`
	N int64   `json:"n"`
}

// A completer gets integers as int64 (json.Number beyond int64), and the
// raw string of what is no integer: an integer variable of a float field,
// which converts as a number (appendValue), too.
func TestTypedArgumentsOfAnIntegerVariable(t *testing.T) {
	c := mustCommand[typedCompletionArgs](t)
	cases := []struct {
		name, s string
		want    any
	}{
		{"f", "2", int64(2)},
		{"f", "2.0", int64(2)},
		{"f", "1e3", int64(1000)},
		{"f", "2.5", "2.5"},
		{"f", "1e-3", "1e-3"},
		{"f", "1e30", json.Number("1e+30")},
		{"n", "7", int64(7)},
		{"n", "2.5", "2.5"},
	}
	for _, tc := range cases {
		got := c.tmpl.typedArguments(map[string]string{tc.name: tc.s})[tc.name]
		if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", tc.want, tc.want) {
			t.Errorf("%s=%s: completer gets %T %v, want %T %v", tc.name, tc.s, got, got, tc.want, tc.want)
		}
	}
}
