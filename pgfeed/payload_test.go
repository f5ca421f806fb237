package pgfeed

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEncodePayloadsFitsOne(t *testing.T) {
	got := encodePayloads("me", []string{"customers", "customers/12", "customers"}, maxPayload)
	want := `{"i":"me","k":["customers","customers/12"]}`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %q, want [%q]", got, want)
	}
}

func TestEncodePayloadsWidensToTables(t *testing.T) {
	var keys []string
	for i := range 2000 {
		keys = append(keys, fmt.Sprintf("customers/%d", i), fmt.Sprintf("orders/%d", i))
	}
	got := encodePayloads("me", keys, maxPayload)
	want := `{"i":"me","k":["customers","orders"]}`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %q, want [%q]", got, want)
	}
}

func TestEncodePayloadsSplits(t *testing.T) {
	for _, limit := range []int{60, 100, 1000, maxPayload} {
		var keys []string
		for i := range 1000 {
			keys = append(keys, fmt.Sprintf("t<%d>_%s", i, strings.Repeat("é", i%7)))
		}
		got := encodePayloads("instance", keys, limit)
		var all []string
		for _, p := range got {
			if len(p) > limit {
				t.Fatalf("limit %d: payload of %d bytes", limit, len(p))
			}
			d, everything, err := decodePayload(p)
			if err != nil || everything || d.Instance != "instance" {
				t.Fatalf("decode %q: %+v %v %v", p, d, everything, err)
			}
			all = append(all, d.Keys...)
		}
		if !slices.Equal(all, keys) {
			t.Fatalf("limit %d: keys changed in transit", limit)
		}
		if limit == maxPayload && len(got) < 2 {
			t.Fatalf("%d payloads, want several", len(got))
		}
	}
}

// TestEncodePayloadsKeyTooLong: a table key longer than any notification
// failed the whole publish, and the other instances never heard of the
// change, nor of the other keys with it. It goes as the empty payload,
// everything, which re-runs too much but misses nothing; a row key that
// long still goes as its table.
func TestEncodePayloadsKeyTooLong(t *testing.T) {
	long := strings.Repeat("x", maxPayload)
	for _, tc := range []struct {
		name string
		keys []string
		want []string
	}{
		{"a table", []string{"customers", long}, []string{""}},
		{"a table among many", []string{"t", long, "u"}, []string{""}},
		{"a row", []string{"customers/" + long}, []string{`{"i":"me","k":["customers"]}`}},
	} {
		if got := encodePayloads("me", tc.keys, maxPayload); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %.80q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDecodePayload(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    payload
		all     bool
		invalid bool
	}{
		{in: `{"i":"x","k":["a","a/1"]}`, want: payload{"x", []string{"a", "a/1"}}},
		{in: `{"i" : "sql", "k" : ["a"]}`, want: payload{"sql", []string{"a"}}}, // json_build_object's spacing
		{in: `{"k":["a"],"v":2}`, want: payload{"", []string{"a"}}},
		{in: ``, all: true},
		{in: `  `, all: true},
		{in: `customers`, all: true, invalid: true},
		{in: `{"k":"a"}`, all: true, invalid: true},
		// JSON that json reads without an error, but with no list of
		// keys: what it meant cannot be known either.
		{in: `null`, all: true, invalid: true},
		{in: `{}`, all: true, invalid: true},
		{in: `{"table":"customers","id":12}`, all: true, invalid: true},
		{in: `{"i":"other","k":null}`, all: true, invalid: true},
		{in: `{"i":"other","k":[]}`, want: payload{"other", []string{}}}, // nothing changed
	} {
		got, all, err := decodePayload(tc.in)
		if (err != nil) != tc.invalid || all != tc.all || got.Instance != tc.want.Instance || !slices.Equal(got.Keys, tc.want.Keys) {
			t.Errorf("decodePayload(%q) = %+v, %v, %v", tc.in, got, all, err)
		}
	}
}

func TestPayloadFormat(t *testing.T) {
	// The triggers write this format in SQL; keep the field names fixed.
	b, _ := json.Marshal(payload{"i", []string{"k"}})
	if string(b) != `{"i":"i","k":["k"]}` {
		t.Fatal(string(b))
	}
}

func TestBackoff(t *testing.T) {
	lo, hi := 100*time.Millisecond, 5*time.Second
	for attempt, want := range []time.Duration{lo, 2 * lo, 4 * lo, 8 * lo, 16 * lo, 32 * lo, hi, hi, hi} {
		for range 100 {
			if d := backoff(lo, hi, attempt); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v, want within [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if d := backoff(lo, hi, 1000); d > hi {
		t.Fatalf("attempt 1000: %v", d)
	}
}

func TestLiteral(t *testing.T) {
	if got := literal(`it's a \ test`); got != `E'it''s a \\ test'` {
		t.Fatal(got)
	}
}
