package adapter

import (
	"encoding/json"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
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
