package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/middleware"
)

// edgeNumberArgs: numbers with bounds, a float32, an unsigned integer, an enum
// whose constant holds a letter whose upper case is longer in UTF-8.
type edgeNumberArgs struct {
	Max    *float64 `json:"max,omitempty" jsonschema:"maximum=1"`
	Above  *float64 `json:"above,omitempty" jsonschema:"exclusiveMinimum=0"`
	Below  *float64 `json:"below,omitempty" jsonschema:"exclusiveMaximum=1"`
	F32    *float32 `json:"f32,omitempty" jsonschema:"maximum=16777216"`
	F32Min *float32 `json:"f32min,omitempty" jsonschema:"exclusiveMinimum=16777216"`
	U      *uint64  `json:"u,omitempty"`
	Street string   `json:"street,omitempty" jsonschema:"enum=straße,enum=weg"`
	Unit   string   `json:"unit,omitempty" jsonschema:"enum=kelvin,enum=celsius"`
}

const edgeNumberTemplate = "app://edge_numbers{?above,below,f32,f32min,max,street,u,unit}"

// edgeNumberApp declares edge_numbers, whose function records the arguments it
// was run with (as JSON) and returns them.
func edgeNumberApp(t *testing.T) (*adaptertest.Client, func() []string) {
	t.Helper()
	srv := server.NewMCPServer("t", "1")
	a := adapter.Wrap(srv)
	var mu sync.Mutex
	var seen []string
	adapter.Live(a, "edge_numbers", "", func(_ context.Context, args edgeNumberArgs) (edgeNumberArgs, error) {
		b, _ := json.Marshal(args)
		mu.Lock()
		seen = append(seen, string(b))
		mu.Unlock()
		return args, nil
	})
	return adaptertest.New(t, a), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// outcome runs the same value by a read and by a tools/call and says
// whether each was accepted, with its answer.
func readAndCallOutcomes(t *testing.T, c *adaptertest.Client, query, args string) (readOK bool, readSaid string, callOK bool, callSaid string) {
	t.Helper()
	text, err := c.Read("app://edge_numbers?" + query)
	readOK, readSaid = err == nil, text
	if err != nil {
		readSaid = err.Error()
	}
	res, err := c.CallTool("edge_numbers", json.RawMessage(args))
	if err != nil {
		t.Fatalf("tools/call %s: %v", args, err)
	}
	callOK = !res.IsError
	b, _ := json.Marshal(res.Content)
	callSaid = string(b)
	return
}

// docs/reading.md: "The converted arguments are then held to the whole
// published input schema, exactly as a tools/call's are ... The same values
// give the same list on a read and on a tools/call." A read rounds a number
// to float64 (float32) before the schema sees it; a tools/call has the
// schema check the exact decimal, and Go rounds it afterwards.
func TestNumbersNearExclusiveBoundsAlikeOnReadAndToolCall(t *testing.T) {
	c, _ := edgeNumberApp(t)
	cases := []struct{ name, query, args string }{
		{"exclusiveMinimum=0, 1e-400", "above=1e-400", `{"above":1e-400}`},
		{"exclusiveMaximum=1, 0.99999999999999999", "below=0.99999999999999999", `{"below":0.99999999999999999}`},
		// Rounded onto the bound: the exact value is over it.
		{"maximum=1, 1.00000000000000001", "max=1.00000000000000001", `{"max":1.00000000000000001}`},
		{"maximum=1, 100000000000000001e-17", "max=100000000000000001e-17", `{"max":100000000000000001e-17}`},
		{"float32 maximum=16777216, 16777217", "f32=16777217", `{"f32":16777217}`},
		{"float32 maximum=16777216, 16777216.5", "f32=16777216.5", `{"f32":16777216.5}`},
		{"maximum=1, -1.00000000000000001", "max=-1.00000000000000001", `{"max":-1.00000000000000001}`},
		{"unsigned, -0", "u=-0", `{"u":-0}`},
		{"exclusiveMinimum=0, 1e-99999999999999999999", "above=1e-99999999999999999999", `{"above":1e-99999999999999999999}`},
		{"maximum=1, 1.0000000000000000000000001e0", "max=1.0000000000000000000000001e0", `{"max":1.0000000000000000000000001e0}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			readOK, readSaid, callOK, callSaid := readAndCallOutcomes(t, c, tc.query, tc.args)
			if readOK != callOK {
				t.Errorf("read ?%s accepted=%v (%s), but tools/call %s accepted=%v (%s)",
					tc.query, readOK, readSaid, tc.args, callOK, callSaid)
			}
		})
	}
}

// docs/commands.md: "Each tag below becomes a keyword of the published
// schema, and each keyword is enforced on every tools/call, read and
// subscription: nothing needs repeating in Validate." A tools/call whose
// number is below the bound as written but rounds onto it in Go runs the
// command with a value the schema forbids.
func TestToolCallNeverRunsWithAValueTheSchemaForbids(t *testing.T) {
	c, seen := edgeNumberApp(t)
	for _, args := range []string{`{"below":0.99999999999999999}`, `{"above":1e-400}`, `{"f32min":16777217}`} {
		if _, err := c.CallTool("edge_numbers", json.RawMessage(args)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range seen() {
		var got edgeNumberArgs
		if err := json.Unmarshal([]byte(s), &got); err != nil {
			t.Fatal(err)
		}
		if got.Below != nil && !(*got.Below < 1) {
			t.Errorf("the command ran with below=%v, but the schema says exclusiveMaximum=1", *got.Below)
		}
		if got.Above != nil && !(*got.Above > 0) {
			t.Errorf("the command ran with above=%v, but the schema says exclusiveMinimum=0", *got.Above)
		}
		if got.F32Min != nil && !(*got.F32Min > 16777216) {
			t.Errorf("the command ran with f32min=%v, but the schema says exclusiveMinimum=16777216", *got.F32Min)
		}
	}
}

// docs/completion.md: an enum variable completes to "its constants that
// start with the typed prefix (ignoring case)". complete compares
// s[:len(prefix)] with strings.EqualFold, so a prefix whose case-folded
// form has another length in UTF-8 (ẞ is 3 bytes, ß 2; the Kelvin sign K
// is 3 bytes, k 1) never matches, though strings.EqualFold says they are
// equal ignoring case.
func TestCompletionIgnoresCaseAcrossUTF8Lengths(t *testing.T) {
	c, _ := edgeNumberApp(t)
	cases := []struct{ variable, prefix, want string }{
		{"street", "STRAß", "straße"}, // passes: same byte lengths
		{"street", "STRAẞ", "straße"}, // U+1E9E LATIN CAPITAL LETTER SHARP S
		{"unit", "\u212a", "kelvin"},  // U+212A KELVIN SIGN
	}
	for _, tc := range cases {
		head := string([]rune(tc.want)[:len([]rune(tc.prefix))]) // as many characters as the prefix
		if !strings.EqualFold(tc.prefix, head) {
			t.Fatalf("strings.EqualFold(%q, %q) = false", tc.prefix, head)
		}
		res, err := c.Complete(edgeNumberTemplate, tc.variable, tc.prefix, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Completion.Values; len(got) != 1 || got[0] != tc.want {
			t.Errorf("complete %s %q = %q; want [%q], since strings.EqualFold(%q, %q) = true",
				tc.variable, tc.prefix, got, tc.want, tc.prefix, head)
		}
	}
}

// options.go: "panic recovery outermost, so that a panic anywhere becomes
// an internal error"; docs/middleware.md: a completion passes the chain
// (Call.Completion set). complete.go asserts the chain's result with
// res.([]string), outside Recover: a middleware that answers a call itself
// with anything but a []string (here nil, nil, say a dry-run mode for
// agents) panics the request goroutine. Through HandleMessage (stdio, the
// adaptertest client) nothing recovers it.
func TestCompletionSurvivesAMiddlewaresOwnResult(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	a := adapter.Wrap(srv, adapter.WithMiddleware(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, call *middleware.Call) (any, error) {
			if call.Origin == middleware.Agent {
				return nil, nil // answers agents itself, with no result
			}
			return next(ctx, call)
		}
	}))
	adapter.Live(a, "edge_numbers", "", func(_ context.Context, args edgeNumberArgs) (edgeNumberArgs, error) { return args, nil })
	c := adaptertest.New(t, a)
	defer func() {
		if v := recover(); v != nil {
			t.Errorf("completion/complete panicked: %v", v)
		}
	}()
	_, _ = c.Complete(edgeNumberTemplate, "unit", "k", nil) // an error or no values are fine; a panic is not
}

// A number's digits and exponent are bounded on every way in: the schema's
// validator holds numbers as exact fractions, where 1e-999999 took 50 ms
// and an exponent math/big refuses panicked the request.
func TestNumbersOutOfScaleRefusedOnReadAndToolCall(t *testing.T) {
	c, seen := edgeNumberApp(t)
	// Within float64's range: mcp-go refuses a larger number itself, as
	// an unparsable request, before the adapter sees it.
	zeros := strings.Repeat("0", 1000)
	for _, value := range []string{"1e-99999999999999999999", "0e99999999999999999999", "1e-999999", "-1E-1001", "0." + zeros + "1", "1." + zeros} {
		t.Run(value[:min(len(value), 24)], func(t *testing.T) {
			readOK, readSaid, callOK, callSaid := readAndCallOutcomes(t, c, "max="+value, `{"max":`+value+`}`)
			for _, said := range []struct {
				way string
				ok  bool
				msg string
			}{{"read", readOK, readSaid}, {"tools/call", callOK, callSaid}} {
				if said.ok || !strings.Contains(said.msg, "max: must be a number of at most 1000 digits") {
					t.Errorf("%s of max=%.30s: accepted=%v, said %.200s; want it refused as out of scale", said.way, value, said.ok, said.msg)
				}
			}
		})
	}
	if got := seen(); len(got) != 0 {
		t.Errorf("the command ran with %v", got)
	}
}

// A tools/call whose arguments give a key twice is refused, at any depth,
// as a read refuses a query parameter given twice: encoding/json would
// run the command with the last value, where a client or a proxy that
// checked the first meant that one.
func TestToolCallRefusesAKeyGivenTwice(t *testing.T) {
	c, seen := edgeNumberApp(t)
	for _, tc := range []struct{ args, want string }{
		{`{"max":0.5,"max":2}`, `max: is given twice`},
		{`{"max":0.5,"\u006dax":2}`, `max: is given twice`},
		{`{"unit":"kelvin","max":1,"unit":"celsius"}`, `unit: is given twice`},
	} {
		res, err := c.CallTool("edge_numbers", json.RawMessage(tc.args))
		if err != nil {
			t.Fatalf("tools/call %s: %v", tc.args, err)
		}
		b, _ := json.Marshal(res.Content)
		if !res.IsError || !strings.Contains(string(b), tc.want) {
			t.Errorf("tools/call %s: error=%v, said %s; want it refused with %q", tc.args, res.IsError, b, tc.want)
		}
	}
	if got := seen(); len(got) != 0 {
		t.Errorf("the command ran with %v", got)
	}
}

// Adapter.Call takes JSON arguments as a json.RawMessage: a key given
// twice, or more after the first value, is refused as a tools/call's.
func TestCallRefusesAmbiguousJSONArguments(t *testing.T) {
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	ran := 0
	adapter.Live(a, "labels", "", func(_ context.Context, args struct {
		Labels map[string]int `json:"labels"`
	}) (int, error) {
		ran++
		return len(args.Labels), nil
	})
	for _, tc := range []struct{ args, want string }{
		{`{"labels":{"a":1,"a":2}}`, `labels: has the key "a" twice`},
		{`{"labels":{"a":1}} {"labels":{}}`, `more follows the first value`},
		{`{"labels":{}}x`, `not valid JSON`},
	} {
		_, err := a.Call(context.Background(), "labels", json.RawMessage(tc.args))
		var verr *adapter.ValidationError
		if !errors.As(err, &verr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Call(%s) = %v; want a ValidationError saying %q", tc.args, err, tc.want)
		}
	}
	if ran != 0 {
		t.Errorf("the command ran %d times", ran)
	}
	if n, err := a.Call(context.Background(), "labels", json.RawMessage(` {"labels":{"a":1,"b":2}} `)); err != nil || n != 2 {
		t.Errorf("Call with distinct keys = %v, %v; want 2", n, err)
	}
}

// mapKeyArgs has maps whose keys json reads into Go values: two different
// JSON keys may be one key of the map ("1" and "01" are both 1).
type mapKeyArgs struct {
	ByID   map[int]string       `json:"by_id,omitempty"`
	Small  map[uint8]int        `json:"small,omitempty"`
	Hosts  map[netip.Addr]int   `json:"hosts,omitempty"`
	Groups []mapKeyGroup        `json:"groups,omitempty"`
	Labels map[string]string    `json:"labels,omitempty"`
	Nested map[int]map[int]bool `json:"nested,omitempty"`
}

type mapKeyGroup struct {
	Members map[int64]bool `json:"members,omitempty"`
}

// A tools/call whose object gives two keys that json reads as one key of
// a Go map is refused as a key given twice is: json would keep the last
// without a word. Distinct keys pass.
func TestToolCallRefusesKeysThatNameOneMapKey(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	a := adapter.Wrap(srv)
	ran := 0
	adapter.Live(a, "map_keys", "", func(_ context.Context, args mapKeyArgs) (int, error) {
		ran++
		return len(args.ByID) + len(args.Small) + len(args.Hosts) + len(args.Labels) + len(args.Nested), nil
	})
	c := adaptertest.New(t, a)
	for _, tc := range []struct{ args, want string }{
		{`{"by_id":{"1":"a","01":"b"}}`, `by_id: has the keys "01" and "1", which are one key`},
		{`{"small":{"7":1,"007":2}}`, `small: has the keys "007" and "7", which are one key`},
		{`{"hosts":{"::1":1,"0::1":2}}`, `hosts: has the keys "0::1" and "::1", which are one key`},
		{`{"groups":[{},{"members":{"5":true,"05":false}}]}`, `groups: item 1/members has the keys "05" and "5", which are one key`},
		{`{"nested":{"1":{"2":true,"02":true}}}`, `nested: item 1 has the keys "02" and "2", which are one key`},
	} {
		res, err := c.CallTool("map_keys", json.RawMessage(tc.args))
		if err != nil {
			t.Fatalf("tools/call %s: %v", tc.args, err)
		}
		said := fmt.Sprint(res.Content)
		if !res.IsError || !strings.Contains(said, tc.want) {
			t.Errorf("tools/call %s: error=%v, said %s; want it refused with %q", tc.args, res.IsError, said, tc.want)
		}
	}
	if ran != 0 {
		t.Errorf("the command ran %d times", ran)
	}
	res, err := c.CallTool("map_keys", json.RawMessage(`{"by_id":{"1":"a","10":"b"},"hosts":{"::1":1,"::2":2},"labels":{"a":"x","A":"y"},"nested":{"1":{"1":true},"2":{"1":true}}}`))
	if err != nil || res.IsError {
		b, _ := json.Marshal(res)
		t.Errorf("distinct keys: %v %s; want them accepted", err, b)
	}
}

// A request that gives a key of its own twice ("arguments", "name",
// "uri") is as ambiguous as arguments that do: json keeps the last, where
// a proxy that checked the first meant that one. It is refused with
// -32602, and nothing runs. The legacy client sends params as given (the
// modern one re-encodes them to add _meta).
func TestRequestRefusesAParamGivenTwice(t *testing.T) {
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	var seen []float64
	adapter.Live(a, "edge_numbers", "", func(_ context.Context, args edgeNumberArgs) (int, error) {
		seen = append(seen, *args.Max)
		return 0, nil
	})
	c := adaptertest.New(t, a, adaptertest.Legacy())
	for _, tc := range []struct{ method, params, want string }{
		{"tools/call", `{"name":"edge_numbers","arguments":{"max":0.5},"arguments":{"max":0.9}}`, `params: has the key "arguments" twice`},
		{"tools/call", `{"name":"elsewhere","name":"edge_numbers","arguments":{"max":0.5}}`, `params: has the key "name" twice`},
		{"resources/read", `{"uri":"app://edge_numbers?max=0.5","uri":"app://edge_numbers?max=0.9"}`, `params: has the key "uri" twice`},
		{"tools/call", `{"name":"edge_numbers","arguments":{"max":0.5,"max":0.9}}`, ``}, // an isError result naming max
		{"tools/call", `{"name":"edge_numbers","params":1,"arguments":{"max":0.5}}`, ``},
	} {
		_, err := c.Call(tc.method, json.RawMessage(tc.params))
		var werr *adaptertest.WireError
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s %s: %v; want it answered", tc.method, tc.params, err)
			}
			continue
		}
		if !errors.As(err, &werr) || werr.Code != -32602 || !strings.Contains(werr.Message, tc.want) {
			t.Errorf("%s %s: %v; want -32602 saying %q", tc.method, tc.params, err, tc.want)
		}
	}
	if len(seen) != 1 {
		t.Errorf("the command ran with %v; want it run once, by the last request", seen)
	}
}
