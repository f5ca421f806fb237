package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestSettleKeepsWhatMatters(t *testing.T) {
	cases := []struct {
		name string
		in   []issue
		want []string // path: message, in order
	}{
		{"a type error makes the place's other errors moot",
			[]issue{{path: []string{"page"}, msg: "must be at least 1"}, {path: []string{"page"}, msg: "must be an integer", rank: rankType}},
			[]string{"page: must be an integer"}},
		{"an enum error outranks a keyword, a type error outranks both",
			[]issue{{path: []string{"s"}, msg: "pattern"}, {path: []string{"s"}, msg: "enum", rank: rankEnum},
				{path: []string{"t"}, msg: "enum", rank: rankEnum}, {path: []string{"t"}, msg: "type", rank: rankType}},
			[]string{"s: enum", "t: type"}},
		{"Go's failure of a value outranks everything at and below it",
			[]issue{{path: []string{"ids", "0"}, msg: "must be at least 1"}, {path: []string{"ids"}, msg: "must list at most 3 items"},
				{path: []string{"ids"}, msg: "must be between 0 and 255", rank: rankDecode}},
			[]string{"ids: must be between 0 and 255"}},
		{"keywords of one place stay, in order, once",
			[]issue{{path: []string{"code"}, msg: "b"}, {path: []string{"code"}, msg: "a"}, {path: []string{"code"}, msg: "b"}},
			[]string{"code: b", "code: a"}},
		{"places in order, item 10 after item 9",
			[]issue{{path: []string{"z"}, msg: "z"}, {path: []string{"ids", "10"}, msg: "ten"}, {path: []string{"ids", "9"}, msg: "nine"},
				{path: []string{"ids"}, msg: "list"}},
			[]string{"ids: list", "ids/9: nine", "ids/10: ten", "z: z"}},
	}
	for _, tc := range cases {
		var got []string
		for _, is := range settle(tc.in) {
			got = append(got, strings.Join(is.path, "/")+": "+is.msg)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestMergeFieldErrorsNamesEachFieldOnce(t *testing.T) {
	got := mergeFieldErrors([]FieldError{
		{"code", "must be at least 2 characters long"}, {"page", "must be an integer"},
		{"code", `must match the pattern "^[A-Z]+$"`}, {"code", "must be at least 2 characters long"},
		{"", "give a name"}, {"", "or an email"},
	})
	want := []FieldError{
		{"code", `must be at least 2 characters long and must match the pattern "^[A-Z]+$"`},
		{"page", "must be an integer"},
		{"", "give a name and or an email"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Hostile arguments (thousands of unknown properties) get a bounded answer.
func TestAnswerIsBounded(t *testing.T) {
	c := mustCommand[decodeArgs](t)
	var b strings.Builder
	b.WriteString(`{"id":1`)
	for i := range 5000 {
		fmt.Fprintf(&b, `,"x%04d":1`, i)
	}
	b.WriteString("}")
	_, err := c.decode([]byte(b.String()))
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Errors) != maxFieldErrors+1 {
		t.Fatalf("got %d errors, want %d and a count", len(verr.Errors), maxFieldErrors)
	}
	if first, last := verr.Errors[0], verr.Errors[maxFieldErrors]; first.Field != "x0000" || last != (FieldError{"", "4900 more fields are wrong"}) {
		t.Errorf("first %v, last %v", first, last)
	}
}

// Validate runs on the fields that passed, never on a value the schema
// refused: fuzzArgs.Validate panics on an id below 1.
func TestValidateRunsBesideFailures(t *testing.T) {
	c := mustCommand[fuzzArgs](t)
	cases := []struct {
		uri  string
		want []FieldError
	}{
		{"app://cmd/5?lo=5&hi=2", []FieldError{{"hi", "must not be less than lo"}}},
		{"app://cmd/5?lo=5&hi=2&page=0", []FieldError{{"page", "must be at least 1"}, {"hi", "must not be less than lo"}}},
		{"app://cmd/5?lo=300&hi=2", []FieldError{{"lo", "must be between 0 and 255"}}},
		{"app://cmd/5?code=ZZ", []FieldError{{"code", "is reserved and is reserved twice"}}},
		// The id failed: Validate panics on the zero id it is given instead,
		// which counts as nothing to add.
		{"app://cmd/0?lo=5&hi=2", []FieldError{{"id", "must be at least 1"}}},
	}
	for _, tc := range cases {
		values, err := c.tmpl.parse(tc.uri)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := c.argsFromURI(values)
		if err == nil {
			_, err = c.decode(raw)
		}
		var verr *ValidationError
		if !errors.As(err, &verr) || !slices.Equal(verr.Errors, tc.want) {
			t.Errorf("%s: %v, want %v", tc.uri, err, tc.want)
		}
	}
}

func TestNullablePaths(t *testing.T) {
	c := mustCommand[fuzzArgs](t)
	var got []string
	for p := range c.nullable {
		got = append(got, p)
	}
	slices.Sort(got)
	if want := []string{"sort", "tiny"}; !slices.Equal(got, want) {
		t.Errorf("nullable %q, want %q", got, want)
	}
}

type outShape struct {
	N     int                 `json:"n"`
	P     *int                `json:"p"`
	L     []outItem           `json:"l"`
	M     map[string][]int    `json:"m"`
	E     *string             `json:"e" jsonschema:"enum=a,enum=b"`
	Items [2]outItem          `json:"items"`
	Any   any                 `json:"any"`
	Raw   json.RawMessage     `json:"raw"`
	Deep  map[string]*outItem `json:"deep,omitempty"`
}

type outItem struct {
	Tags []string `json:"tags"`
}

// The output schema says what the adapter writes: null for a nil pointer
// (an anyOf, never a union of types), an empty array or object for a nil
// slice or map, and nothing else changes; and a value of the type, its
// slices and maps nil at every level, conforms.
func TestOutputSchemaAllowsGoNulls(t *testing.T) {
	raw, ok, err := outputSchema(reflect.TypeFor[outShape]())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	item := `{"additionalProperties":false,"properties":{"tags":{"items":{"type":"string"},"type":"array"}},"required":["tags"],"type":"object"}`
	want := map[string]string{
		"n":     `{"type":"integer"}`,
		"p":     `{"anyOf":[{"type":"integer"},{"type":"null"}]}`,
		"l":     `{"items":` + item + `,"type":"array"}`,
		"m":     `{"additionalProperties":{"items":{"type":"integer"},"type":"array"},"type":"object"}`,
		"e":     `{"anyOf":[{"enum":["a","b"],"type":"string"},{"type":"null"}]}`,
		"items": `{"items":` + item + `,"maxItems":2,"minItems":2,"type":"array"}`,
		"any":   `true`,
		"raw":   `true`,
		"deep":  `{"additionalProperties":{"anyOf":[` + item + `,{"type":"null"}]},"type":"object"}`,
	}
	if strings.Contains(string(raw), `"type":[`) {
		t.Errorf("the schema holds a union of types: %s", raw)
	}
	checkSchema(t, raw, outShape{})
	checkSchema(t, raw, outShape{L: []outItem{{}}, M: map[string][]int{"a": nil}, Deep: map[string]*outItem{"x": nil, "y": {}}})
	for name, w := range want {
		if got := string(s.Properties[name]); got != w {
			t.Errorf("%s:\n got %s\nwant %s", name, got, w)
		}
	}
	for _, r := range []reflect.Type{reflect.TypeFor[*outShape](), reflect.TypeFor[[]outShape](),
		reflect.TypeFor[map[string]int](), reflect.TypeFor[json.RawMessage](), reflect.TypeFor[string]()} {
		if _, ok, _ := outputSchema(r); ok {
			t.Errorf("%v has an output schema, want none: it may not encode as an object", r)
		}
	}
}

// BenchmarkReadArguments measures what a read of a five-variable template
// costs before the command runs, now that its arguments are held to the
// schema: parse, convert, validate and decode. BenchmarkParseConvert is the
// same without the last two.
func BenchmarkReadArguments(b *testing.B) {
	type args struct {
		Direction string `json:"direction,omitempty" jsonschema:"enum=asc,enum=desc"`
		Page      *int   `json:"page,omitempty" jsonschema:"minimum=1"`
		PerPage   *int   `json:"per_page,omitempty" jsonschema:"minimum=1,maximum=100"`
		Search    string `json:"search,omitempty" jsonschema:"maxLength=200"`
		Sort      string `json:"sort,omitempty" jsonschema:"enum=name,enum=created_at"`
	}
	c, err := newCommand[args, any]("app", "customers_index", "", true, nil)
	if err != nil {
		b.Fatal(err)
	}
	const uri = "app://customers_index?direction=desc&page=3&per_page=25&search=ada%20lovelace&sort=name"
	b.ReportAllocs()
	for b.Loop() {
		values, err := c.tmpl.parse(uri)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := c.argsFromURI(values)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// fuzzArgs has a keyword of each kind on scalars (a template) and lists
// beside it in fuzzListArgs (a tool only).
type fuzzArgs struct {
	ID    int64    `json:"id" jsonschema:"minimum=1"`
	Page  *int     `json:"page,omitempty" jsonschema:"minimum=1,maximum=100"`
	Ratio *float32 `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,multipleOf=0.25"`
	Code  string   `json:"code,omitempty" jsonschema:"minLength=2,maxLength=4,pattern=^[A-Z]+$"`
	Day   string   `json:"day,omitempty" jsonschema:"format=date"`
	Mail  string   `json:"mail,omitempty" jsonschema:"format=email"`
	Sort  *string  `json:"sort,omitempty" jsonschema:"nullable,enum=name,enum=created_at"`
	Tiny  *int8    `json:"tiny,omitempty" jsonschema:"nullable,maximum=100"`
	Flag  bool     `json:"flag,omitempty"`
	Range struct {
		Lo *uint8 `json:"lo,omitempty" jsonschema:"maximum=200"`
		Hi *uint8 `json:"hi,omitempty"`
	} `json:"range,omitempty"`
}

// Validate trusts the schema: it would panic on an id below 1, which the
// schema refuses, so it must never see one, except on arguments with
// failed fields left out, where a panic is taken as nothing to add.
func (a fuzzArgs) Validate() error {
	if a.ID < 1 {
		panic("Validate ran on an id the schema refuses")
	}
	var errs ValidationError
	if a.Range.Lo != nil && a.Range.Hi != nil && *a.Range.Hi < *a.Range.Lo {
		errs.Add("hi", "must not be less than lo")
	}
	if a.Code == "ZZ" {
		errs.Add("code", "is reserved")
		errs.Add("code", "is reserved twice") // merged, never listed twice
	}
	return errs.Err()
}

type fuzzListArgs struct {
	IDs  []int8            `json:"ids" jsonschema:"minItems=1,maxItems=4,uniqueItems=true,minimum=1"`
	Tags map[string]string `json:"tags,omitempty"`
	Rows []struct {
		N int `json:"n" jsonschema:"minimum=0"`
	} `json:"rows,omitempty"`
}

// FuzzCheckArguments feeds the read path (a URI parsed, converted and
// checked: argsFromURI) and the tools/call path (arbitrary JSON arguments,
// canonicalArguments and decode) arbitrary input. Neither may panic, and a
// failure is a *ValidationError that names each field at most once, with a
// message, and at most maxFieldErrors of them plus a count.
func FuzzCheckArguments(f *testing.F) {
	read := mustFuzzCommand[fuzzArgs](f)
	if read.tmpl == nil {
		f.Fatalf("fuzzArgs has no template: %s %s", read.reason, read.detail)
	}
	list := mustFuzzCommand[fuzzListArgs](f)
	f.Fuzz(func(t *testing.T, uri string, args []byte) {
		if values, err := read.tmpl.parse(uri); err == nil {
			raw, err := read.argsFromURI(values)
			if err == nil {
				_, err = read.decode(raw)
			}
			checkFieldErrors(t, "read "+uri, err)
		}
		for _, c := range []*command{read, list} {
			raw, err := canonicalArguments(json.RawMessage(args))
			if err == nil {
				_, err = c.decode(raw)
			}
			checkFieldErrors(t, "tools/call "+string(args), err)
		}
	})
}

func mustFuzzCommand[A any](f *testing.F) *command {
	c, err := newCommand[A, any]("app", "fz", "", true, nil)
	if err != nil {
		f.Fatal(err)
	}
	return c
}

func checkFieldErrors(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Errors) == 0 {
		t.Fatalf("%s: %T %v, want a *ValidationError with field errors", what, err, err)
	}
	if len(verr.Errors) > maxFieldErrors+1 {
		t.Fatalf("%s: %d field errors, want at most %d", what, len(verr.Errors), maxFieldErrors+1)
	}
	seen := map[string]bool{}
	for _, fe := range verr.Errors {
		if seen[fe.Field] {
			t.Fatalf("%s: field %q reported twice: %v", what, fe.Field, verr)
		}
		seen[fe.Field] = true
		if fe.Message == "" {
			t.Fatalf("%s: field %q without a message", what, fe.Field)
		}
	}
}
