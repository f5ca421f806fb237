package adapter_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// kwArgs has a field for every keyword the published schema can state
// through struct tags, all scalars, so that the command has a template and
// each can be tried on a read and on a tools/call alike.
type kwArgs struct {
	ID      int64    `json:"id" jsonschema:"minimum=1"`
	Page    *int     `json:"page,omitempty" jsonschema:"minimum=1"`
	PerPage *int     `json:"per_page,omitempty" jsonschema:"minimum=1,maximum=100"`
	Above   *float64 `json:"above,omitempty" jsonschema:"exclusiveMinimum=0"`
	Below   *float64 `json:"below,omitempty" jsonschema:"exclusiveMaximum=10"`
	Step    *float64 `json:"step,omitempty" jsonschema:"multipleOf=0.5"`
	Code    string   `json:"code,omitempty" jsonschema:"minLength=2,maxLength=4,pattern=^[A-Z]+$"`
	Day     string   `json:"day,omitempty" jsonschema:"format=date"`
	At      string   `json:"at,omitempty" jsonschema:"format=date-time"`
	Clock   string   `json:"clock,omitempty" jsonschema:"format=time"`
	Email   string   `json:"email,omitempty" jsonschema:"format=email"`
	Ref     string   `json:"ref,omitempty" jsonschema:"format=uuid"`
	Link    string   `json:"link,omitempty" jsonschema:"format=uri"`
	IP4     string   `json:"ip4,omitempty" jsonschema:"format=ipv4"`
	IP6     string   `json:"ip6,omitempty" jsonschema:"format=ipv6"`
	Sort    string   `json:"sort,omitempty" jsonschema:"enum=name,enum=created_at"`
	Kind    string   `json:"kind,omitempty" jsonschema_extras:"const=customer"`
	Tiny    *int8    `json:"tiny,omitempty" jsonschema:"nullable,maximum=100"`
	Flag    *bool    `json:"flag,omitempty"`
	Range   kwRange  `json:"range,omitempty"`
}

// kwRange is flattened into the template: lo and hi are variables.
type kwRange struct {
	Lo *int `json:"lo,omitempty" jsonschema:"minimum=0"`
	Hi *int `json:"hi,omitempty" jsonschema:"minimum=0"`
}

// Validate states only what a schema cannot: an order between two fields,
// and a value the pattern allows but the application reserves.
func (a kwArgs) Validate() error {
	var errs adapter.ValidationError
	if a.Range.Lo != nil && a.Range.Hi != nil && *a.Range.Hi < *a.Range.Lo {
		errs.Add("hi", "must not be less than lo")
	}
	if a.Code == "NONE" {
		errs.Add("code", "is reserved")
	}
	return errs.Err()
}

// kwListArgs has the keywords of lists: a tool only.
type kwListArgs struct {
	IDs    []int          `json:"ids" jsonschema:"minItems=1,maxItems=3,uniqueItems=true,minimum=1"`
	Tags   []string       `json:"tags,omitempty" jsonschema:"pattern=^[a-z]+$"`
	Labels map[string]int `json:"labels,omitempty"`
	Sizes  []int8         `json:"sizes,omitempty"`
}

func kwAdapter() *adapter.Adapter {
	a := adapter.Wrap(server.NewMCPServer("kw", "1"))
	adapter.Live(a, "kw", "Every keyword.", func(_ context.Context, args kwArgs) (kwArgs, error) {
		return args, nil
	})
	adapter.Live(a, "kw_list", "Lists.", func(_ context.Context, args kwListArgs) (kwListArgs, error) {
		return args, nil
	})
	return a
}

// kwCase is one set of arguments as a read's URI (app://kw/{id}?query) and
// as a tools/call's JSON (args, with "id" added), and the field errors both
// must answer: nil when the arguments are valid. id is 5 when not given.
type kwCase struct {
	name  string
	id    string
	query string
	args  string
	want  []adapter.FieldError
}

func fe(field, message string) adapter.FieldError {
	return adapter.FieldError{Field: field, Message: message}
}

var kwCases = []kwCase{
	{"valid", "", "page=1&per_page=100&above=0.1&below=9.5&step=1.5&code=AB&day=2024-02-29&at=2024-05-31T13:45:00Z" +
		"&clock=13:45:00Z&email=ada%40example.com&ref=123e4567-e89b-12d3-a456-426614174000&link=https://example.com/a" +
		"&ip4=192.0.2.1&ip6=2001:db8::1&sort=name&kind=customer&tiny=100&flag=true&lo=1&hi=2",
		`{"page":1,"per_page":100,"above":0.1,"below":9.5,"step":1.5,"code":"AB","day":"2024-02-29","at":"2024-05-31T13:45:00Z",
		"clock":"13:45:00Z","email":"ada@example.com","ref":"123e4567-e89b-12d3-a456-426614174000","link":"https://example.com/a",
		"ip4":"192.0.2.1","ip6":"2001:db8::1","sort":"name","kind":"customer","tiny":100,"flag":true,"range":{"lo":1,"hi":2}}`, nil},
	{"null where nullable", "", "tiny=null", `{"tiny":null}`, nil},

	// Each keyword, with what it expected.
	{"minimum", "", "page=0", `{"page":0}`, []adapter.FieldError{fe("page", "must be at least 1")}},
	{"minimum of a path variable", "0", "", `{}`, []adapter.FieldError{fe("id", "must be at least 1")}},
	{"maximum", "", "per_page=101", `{"per_page":101}`, []adapter.FieldError{fe("per_page", "must be at most 100")}},
	{"exclusiveMinimum", "", "above=0", `{"above":0}`, []adapter.FieldError{fe("above", "must be more than 0")}},
	{"exclusiveMaximum", "", "below=10", `{"below":10}`, []adapter.FieldError{fe("below", "must be less than 10")}},
	{"multipleOf", "", "step=0.3", `{"step":0.3}`, []adapter.FieldError{fe("step", "must be a multiple of 0.5")}},
	{"minLength", "", "code=A", `{"code":"A"}`, []adapter.FieldError{fe("code", "must be at least 2 characters long")}},
	{"maxLength", "", "code=ABCDE", `{"code":"ABCDE"}`, []adapter.FieldError{fe("code", "must be at most 4 characters long")}},
	{"pattern", "", "code=ab", `{"code":"ab"}`, []adapter.FieldError{fe("code", `must match the pattern "^[A-Z]+$"`)}},
	{"two keywords of one field", "", "code=a", `{"code":"a"}`,
		[]adapter.FieldError{fe("code", `must be at least 2 characters long and must match the pattern "^[A-Z]+$"`)}},
	{"format date", "", "day=2024-02-30", `{"day":"2024-02-30"}`,
		[]adapter.FieldError{fe("day", `must be a date like 2024-05-31 (format "date")`)}},
	{"format date-time", "", "at=2024-05-31", `{"at":"2024-05-31"}`,
		[]adapter.FieldError{fe("at", `must be a date and time like 2024-05-31T13:45:00Z (format "date-time")`)}},
	{"format time", "", "clock=25:00:00Z", `{"clock":"25:00:00Z"}`,
		[]adapter.FieldError{fe("clock", `must be a time with an offset like 13:45:00Z (format "time")`)}},
	{"format email", "", "email=ada", `{"email":"ada"}`,
		[]adapter.FieldError{fe("email", `must be an email address like ada@example.com (format "email")`)}},
	{"format uuid", "", "ref=123", `{"ref":"123"}`,
		[]adapter.FieldError{fe("ref", `must be a UUID like 123e4567-e89b-12d3-a456-426614174000 (format "uuid")`)}},
	{"format uri", "", "link=%2Fa", `{"link":"/a"}`,
		[]adapter.FieldError{fe("link", `must be an absolute URI like https://example.com/a (format "uri")`)}},
	{"format ipv4", "", "ip4=256.0.0.1", `{"ip4":"256.0.0.1"}`,
		[]adapter.FieldError{fe("ip4", `must be an IPv4 address like 192.0.2.1 (format "ipv4")`)}},
	{"format ipv6", "", "ip6=2001:db8::g", `{"ip6":"2001:db8::g"}`,
		[]adapter.FieldError{fe("ip6", `must be an IPv6 address like 2001:db8::1 (format "ipv6")`)}},
	{"enum", "", "sort=email", `{"sort":"email"}`, []adapter.FieldError{fe("sort", `must be one of "name", "created_at"`)}},
	{"const", "", "kind=supplier", `{"kind":"supplier"}`, []adapter.FieldError{fe("kind", `must be exactly "customer"`)}},
	{"bound of a nullable", "", "tiny=101", `{"tiny":101}`, []adapter.FieldError{fe("tiny", "must be at most 100 or null")}},
	{"type of a nullable", "", "tiny=abc", `{"tiny":"abc"}`, []adapter.FieldError{fe("tiny", "must be an integer or null")}},
	{"fraction for an integer", "", "page=1.5", `{"page":1.5}`, []adapter.FieldError{fe("page", "must be an integer")}},
	{"Go's range before the schema's bound", "", "tiny=300", `{"tiny":300}`,
		[]adapter.FieldError{fe("tiny", "must be between -128 and 127")}},
	{"type", "", "page=abc", `{"page":"abc"}`, []adapter.FieldError{fe("page", "must be an integer")}},
	{"boolean", "", "flag=yes", `{"flag":"yes"}`, []adapter.FieldError{fe("flag", "must be true or false")}},
	{"bound of a flattened variable", "", "lo=-1", `{"range":{"lo":-1}}`, []adapter.FieldError{fe("lo", "must be at least 0")}},
	{"Validate", "", "lo=5&hi=2", `{"range":{"lo":5,"hi":2}}`, []adapter.FieldError{fe("hi", "must not be less than lo")}},
	{"Validate on a value the schema allows", "", "code=NONE", `{"code":"NONE"}`, []adapter.FieldError{fe("code", "is reserved")}},

	// Several fields at once, in the order of their names, then
	// Validate's about the fields that passed.
	{"conversion, bound and pattern together", "", "page=abc&per_page=0&code=ab", `{"page":"abc","per_page":0,"code":"ab"}`,
		[]adapter.FieldError{
			fe("code", `must match the pattern "^[A-Z]+$"`),
			fe("page", "must be an integer"),
			fe("per_page", "must be at least 1"),
		}},
	{"Validate beside a conversion failure", "", "page=abc&lo=5&hi=2", `{"page":"abc","range":{"lo":5,"hi":2}}`,
		[]adapter.FieldError{fe("page", "must be an integer"), fe("hi", "must not be less than lo")}},
	{"Validate does not speak of a failed field", "", "code=none&sort=x", `{"code":"none","sort":"x"}`,
		[]adapter.FieldError{fe("code", `must match the pattern "^[A-Z]+$"`), fe("sort", `must be one of "name", "created_at"`)}},
	{"path and query", "-1", "page=0&flag=1&tiny=1000", `{"page":0,"flag":1,"tiny":1000}`, []adapter.FieldError{
		fe("flag", "must be true or false"),
		fe("id", "must be at least 1"),
		fe("page", "must be at least 1"),
		fe("tiny", "must be between -128 and 127"),
	}},
}

// TestSchemaKeywordsOnReadsAndToolCalls holds every keyword to its word on
// both protocol eras, on a read and on a tools/call of the same arguments,
// and on Adapter.Call: the same field errors, in the same order.
func TestSchemaKeywordsOnReadsAndToolCalls(t *testing.T) {
	for _, era := range []struct {
		name string
		opts []adaptertest.Option
	}{{"2026-07-28", nil}, {"2025-11-25", []adaptertest.Option{adaptertest.Legacy()}}} {
		t.Run(era.name, func(t *testing.T) {
			a := kwAdapter()
			c := adaptertest.New(t, a, era.opts...)
			for _, tc := range kwCases {
				t.Run(tc.name, func(t *testing.T) {
					id := cmp.Or(tc.id, "5")
					args := decodeObject(t, tc.args)
					args["id"] = json.Number(id)
					uri := "app://kw/" + id
					if tc.query != "" {
						uri += "?" + tc.query
					}
					checkRead(t, c, uri, tc.want)
					checkToolCall(t, c, "kw", args, tc.want)
					checkCall(t, a, "kw", args, tc.want)
				})
			}
		})
	}
}

func TestSchemaKeywordsOfLists(t *testing.T) {
	cases := []struct {
		args string
		want []adapter.FieldError
	}{
		{`{"ids":[1,2,3],"tags":["a","b"]}`, nil},
		{`{"ids":[]}`, []adapter.FieldError{fe("ids", "must list at least 1 item")}},
		{`{"ids":[1,2,3,4]}`, []adapter.FieldError{fe("ids", "must list at most 3 items")}},
		{`{"ids":[1,2,1]}`, []adapter.FieldError{fe("ids", "must not repeat an item (items 0 and 2 are equal)")}},
		{`{"ids":[1,0,-1]}`, []adapter.FieldError{fe("ids", "item 1 must be at least 1 and item 2 must be at least 1")}},
		{`{"ids":[1,"x"]}`, []adapter.FieldError{fe("ids", "item 1 must be an integer")}},
		{`{"ids":[1],"tags":["ok","No"]}`, []adapter.FieldError{fe("tags", `item 1 must match the pattern "^[a-z]+$"`)}},
		{`{"ids":"1"}`, []adapter.FieldError{fe("ids", "must be a list")}},
		{`{"ids":[1],"labels":{"a":"x","b":2}}`, []adapter.FieldError{fe("labels", "key a must be an integer")}},
		{`{"ids":[1],"sizes":[1,300]}`, []adapter.FieldError{fe("sizes", "item 1 must be between -128 and 127")}},
		{`{"tags":[]}`, []adapter.FieldError{fe("ids", "is required")}},
		{`{"ids":[1],"extra":true}`, []adapter.FieldError{fe("extra", "is not an argument of this command")}},
		{`{"ids":[1,2,3,4,4,0,"x"]}`, []adapter.FieldError{
			fe("ids", "must list at most 3 items and must not repeat an item (items 3 and 4 are equal) and "+
				"item 5 must be at least 1 and item 6 must be an integer"),
		}},
	}
	for _, era := range []adaptertest.Option{nil, adaptertest.Legacy()} {
		var opts []adaptertest.Option
		if era != nil {
			opts = append(opts, era)
		}
		a := kwAdapter()
		c := adaptertest.New(t, a, opts...)
		for _, tc := range cases {
			t.Run(c.Version()+" "+tc.args, func(t *testing.T) {
				args := decodeObject(t, tc.args)
				checkToolCall(t, c, "kw_list", args, tc.want)
				checkCall(t, a, "kw_list", args, tc.want)
			})
		}
	}
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func checkRead(t *testing.T, c *adaptertest.Client, uri string, want []adapter.FieldError) {
	t.Helper()
	if _, err := url.Parse(uri); err != nil {
		t.Fatal(err)
	}
	_, werr := c.ReadRaw(uri)
	switch {
	case want == nil && werr != nil:
		t.Errorf("read %s: %v", uri, werr)
	case want != nil && werr == nil:
		t.Errorf("read %s succeeded, want %v", uri, want)
	case want != nil && (werr.Code != mcp.INVALID_PARAMS || !slices.Equal(werr.FieldErrors(), want)):
		t.Errorf("read %s:\n got %d %v\nwant -32602 %v", uri, werr.Code, werr.FieldErrors(), want)
	}
}

func checkToolCall(t *testing.T, c *adaptertest.Client, name string, args map[string]any, want []adapter.FieldError) {
	t.Helper()
	res, err := c.CallTool(name, args)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if want == nil {
		if res.IsError {
			t.Errorf("tools/call %v: %+v", args, res.Content)
		}
		return
	}
	var got struct {
		Errors []adapter.FieldError `json:"errors"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil || !res.IsError || !slices.Equal(got.Errors, want) {
		t.Errorf("tools/call %v:\n got isError=%v %s\nwant %v", args, res.IsError, b, want)
	}
	text := res.Content[0].(mcp.TextContent).Text
	if wantText := (&adapter.ValidationError{Errors: want}).Error(); text != wantText {
		t.Errorf("tools/call text %q, want %q", text, wantText)
	}
}

func checkCall(t *testing.T, a *adapter.Adapter, name string, args map[string]any, want []adapter.FieldError) {
	t.Helper()
	_, err := a.Call(context.Background(), name, args)
	var verr *adapter.ValidationError
	switch {
	case want == nil && err != nil:
		t.Errorf("Call %v: %v", args, err)
	case want != nil && (!errors.As(err, &verr) || !slices.Equal(verr.Errors, want)):
		t.Errorf("Call %v: %v, want %v", args, err, want)
	}
}
