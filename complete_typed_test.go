package adapter

import (
	"encoding/json"
	"fmt"
	"testing"
)

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
