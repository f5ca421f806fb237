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
	got, err := encodePayloads("me", []string{"customers", "customers/12", "customers"}, maxPayload)
	if err != nil {
		t.Fatal(err)
	}
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
	got, err := encodePayloads("me", keys, maxPayload)
	if err != nil {
		t.Fatal(err)
	}
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
		got, err := encodePayloads("instance", keys, limit)
		if err != nil {
			t.Fatal(err)
		}
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

func TestEncodePayloadsKeyTooLong(t *testing.T) {
	if _, err := encodePayloads("me", []string{strings.Repeat("x", maxPayload)}, maxPayload); err == nil {
		t.Fatal("no error for a key longer than a notification")
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
