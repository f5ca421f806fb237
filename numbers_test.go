package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplive/adapter/middleware"
)

func TestJSONDecimal(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1", "1"},
		{".5", "0.5"},
		{"-.5", "-0.5"},
		{"1.", "1"},
		{"007.50", "7.50"},
		{"000", "0"},
		{"-0", "-0"},
		{"1e5", "1e5"},
		{"00.1E-07", "0.1E-07"},
	} {
		if got := jsonDecimal(tc.in); got != tc.want {
			t.Errorf("jsonDecimal(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestConvertsExactly(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind reflect.Kind
		want bool
	}{
		{"1.5", reflect.Float64, true},
		{"0.1", reflect.Float64, false},
		{"1.00000000000000001", reflect.Float64, false},
		{"16777217", reflect.Float64, true},
		{"16777217", reflect.Float32, false},
		{"16777216.0", reflect.Float32, true},
		{"1e-400", reflect.Float64, false}, // underflows to 0
	} {
		if got := convertsExactly(tc.in, tc.kind); got != tc.want {
			t.Errorf("convertsExactly(%q, %v) = %v, want %v", tc.in, tc.kind, got, tc.want)
		}
	}
}

// FuzzJSONDecimal: whatever decimal a read's number conversion accepts,
// jsonDecimal writes valid JSON of exactly its value.
func FuzzJSONDecimal(f *testing.F) {
	for _, s := range []string{"1", ".5", "-1.", "007.50e+3", "1e-400", "-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 || !isDecimal(s) {
			return
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return
		}
		got := jsonDecimal(s)
		var n json.Number
		if err := json.Unmarshal([]byte(got), &n); err != nil || !json.Valid([]byte(got)) {
			t.Fatalf("jsonDecimal(%q) = %q: not a JSON number (%v)", s, got, err)
		}
		want, ok := new(big.Rat).SetString(s)
		if !ok {
			return // an exponent too large for big.Rat: no oracle
		}
		have, ok := new(big.Rat).SetString(got)
		if !ok || have.Cmp(want) != 0 {
			t.Fatalf("jsonDecimal(%q) = %q: another value", s, got)
		}
	})
}

func TestNumberOutOfScale(t *testing.T) {
	digits := func(n int) string { return strings.Repeat("7", n) }
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"1", false},
		{"1e1000", false},
		{"1E-1000", false},
		{"1e+1000", false},
		{"1e1001", true},
		{"1e-1001", true},
		{"1e99999999999999999999", true},
		{digits(1000), false},
		{"-" + digits(1000), false},
		{digits(500) + "." + digits(500), false},
		{digits(1001), true},
		{"0." + digits(1000), true},
	} {
		if got := numberOutOfScale(tc.in); got != tc.want {
			t.Errorf("numberOutOfScale(%.20q, %d bytes) = %v, want %v", tc.in, len(tc.in), got, tc.want)
		}
	}
}

// fragileDecoder decodes itself, and panics on a number with a fraction.
type fragileDecoder struct {
	F float64 `json:"f" jsonschema:"maximum=1"`
}

func (d *fragileDecoder) UnmarshalJSON(p []byte) error {
	if bytes.Contains(p, []byte(".")) {
		panic("fragile")
	}
	type plain fragileDecoder
	return json.Unmarshal(p, (*plain)(d))
}

// A read whose number rounded is held to the schema as written
// (checkWrittenNumbers); when that fails, the report decodes the written
// arguments, and so runs the type's UnmarshalJSON: its panic fails the
// read alone, as it fails a tools/call, rather than ending the process.
func TestWrittenNumberReportPanicFailsTheReadAlone(t *testing.T) {
	c := mustCommand[fragileDecoder](t)
	c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, n := range []string{"1.00000000000000001", "2.00000000000000001"} {
		values, err := c.tmpl.parse("app://cmd/" + n)
		if err != nil {
			t.Fatal(err)
		}
		var got error
		func() {
			defer func() {
				if v := recover(); v != nil {
					got = fmt.Errorf("panicked: %v", v)
				}
			}()
			_, got = c.argsFromURI(values)
		}()
		var perr *middleware.PanicError
		if !errors.As(got, &perr) {
			t.Errorf("%s: read answered %v, want a *middleware.PanicError", n, got)
		}
	}
}

type omittedWhenZero struct {
	F float64 `json:"f,omitempty" jsonschema:"exclusiveMinimum=0"`
	S struct {
		G float64 `json:"g" jsonschema:"exclusiveMinimum=0"`
	} `json:"s,omitzero"`
}

// A number Go rounds to 0 in a field that omitempty or omitzero leaves out
// when zero is not in the arguments Go writes again (recheck): it must
// still be held to the schema as 0, which a tools/call runs the command
// with, and which a read refuses.
func TestRecheckNumberRoundedToAnOmittedZero(t *testing.T) {
	c := mustCommand[omittedWhenZero](t)
	for _, raw := range []string{`{"f":1e-400}`, `{"s":{"g":1e-400}}`, `{"f":-1e-400}`} {
		if got, err := c.decode([]byte(raw)); err == nil {
			t.Errorf("%s: tools/call ran the command with %+v, which the schema forbids", raw, got)
		}
	}
	if _, err := c.decode([]byte(`{"f":1e-300,"s":{"g":1e-300}}`)); err != nil {
		t.Errorf("1e-300: %v", err)
	}
}

// A malformed exponent makes no number, which is what a read must say, not
// that the number is out of scale.
func TestAppendNumberNamesWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"1e5e5", "must be a number"},
		{"1e+", "must be a number"},
		{"1e.5", "must be a number"},
		{"1ee5", "must be a number"},
		{"1e-1001", outOfScaleMessage},
		{"1e1001", outOfScaleMessage},
		{"1" + strings.Repeat("0", 1000), outOfScaleMessage},
		{"1e400", floatRangeMessage(reflect.Float64)},
		{"1e-400", ""},
	} {
		if _, got := appendNumber(nil, reflect.Float64, tc.s, ""); got != tc.want {
			t.Errorf("appendNumber(%.20q) says %q, want %q", tc.s, got, tc.want)
		}
	}
}

type scaledInts struct {
	N int64   `json:"n"`
	F float64 `json:"f,omitempty" jsonschema:"type=integer"`
	G int32   `json:"g,omitempty" jsonschema:"type=number"`
}

// An integer of more than maxNumberScale digits gets the same answer from
// a read as from a tools/call, which bounds the scale before all else.
func TestIntegerOutOfScaleSaidAlikeOnBothWaysIn(t *testing.T) {
	c := mustCommand[scaledInts](t)
	big := "1" + strings.Repeat("0", maxNumberScale)
	for _, tc := range []struct{ uri, call string }{
		{"app://cmd/" + big, `{"n":` + big + `}`},
		{"app://cmd/-" + big, `{"n":-` + big + `}`},
		{"app://cmd/1?f=" + big, `{"n":1,"f":` + big + `}`},
		{"app://cmd/1?g=" + big, `{"n":1,"g":` + big + `}`},
	} {
		_, callErr := c.decode([]byte(tc.call))
		values, err := c.tmpl.parse(tc.uri)
		if err != nil {
			t.Fatal(err)
		}
		_, readErr := c.argsFromURI(values)
		if fmt.Sprint(callErr) != fmt.Sprint(readErr) {
			t.Errorf("%.14s…: tools/call says %v, read says %v", tc.uri, callErr, readErr)
		}
	}
}

func TestExactDigits(t *testing.T) {
	type inner struct{ F *float32 }
	for _, tc := range []struct {
		typ  reflect.Type
		want int
	}{
		{reflect.TypeFor[struct{ ID int64 }](), float64Digits},
		{reflect.TypeFor[struct{ F float64 }](), float64Digits},
		{reflect.TypeFor[struct{ F float32 }](), float32Digits},
		{reflect.TypeFor[struct{ L []map[string]inner }](), float32Digits},
		{reflect.TypeFor[struct{ A any }](), float64Digits}, // json decodes a float64 there
	} {
		if got := exactDigits(tc.typ); got != tc.want {
			t.Errorf("exactDigits(%v) = %d, want %d", tc.typ, got, tc.want)
		}
	}
}
