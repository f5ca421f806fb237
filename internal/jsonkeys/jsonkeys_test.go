package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestDuplicate(t *testing.T) {
	many := func(last string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 2 * frameKeysInline {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		return b.String() + `"` + last + `":0}`
	}
	for _, tc := range []struct {
		json string
		at   []string // nil: no key twice
		key  string
	}{
		{`{"a":1,"b":2}`, nil, ""},
		{`{"a":1,"a":2}`, []string{}, "a"},
		{`{"a":1,"\u0061":2}`, []string{}, "a"},
		{`{"\/":1,"/":2}`, []string{}, "/"},
		{`{"a\"b":1,"a\"b":2}`, []string{}, `a"b`},
		{`{"a\\":1,"a":2}`, nil, ""},
		{"{\"\xff\":1,\"\xfe\":2}", []string{}, "\ufffd"},
		{`{"a":{"x":1,"x":2}}`, []string{"a"}, "x"},
		{`{"a":[{"y":1},{"y":1,"y":2}]}`, []string{"a", "1"}, "y"},
		{`{"a":[[],[{"z":{"q":[0,{"w":1,"w":1}]}}]]}`, []string{"a", "1", "0", "z", "q", "1"}, "w"},
		{`{"a":"{\"x\":1,\"x\":2}"}`, nil, ""},
		{`{"a":{"b":1},"b":{"a":1}}`, nil, ""},
		{`{"x":[{"k":1},{"k":1}]}`, nil, ""},
		{`{"k":{"k":{"k":1}}}`, nil, ""},
		{` { "a" : 1 , "a" : 2 } `, []string{}, "a"},
		{many("k3"), []string{}, "k3"},
		{many("k" + fmt.Sprint(2*frameKeysInline-1)), []string{}, "k" + fmt.Sprint(2*frameKeysInline-1)},
		{many("other"), nil, ""},
		{`[{"a":1},{"a":1}]`, nil, ""},
		{`"a"`, nil, ""},
		{`12`, nil, ""},
	} {
		at, key, found := Duplicate([]byte(tc.json))
		if found != (tc.at != nil) || found && (!slices.Equal(at, tc.at) || key != tc.key) {
			t.Errorf("Duplicate(%.60s) = %q, %q, %v; want %q, %q", tc.json, at, key, found, tc.at, tc.key)
		}
	}
}

func FuzzDuplicate(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":[{"b":"}","b":1}]}`, `{"\u00e9":1,"é":2}`, `[{"a":{}},{"a":[]}]`, `{"a\\\"":{"":0,"":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		wantKey, want := duplicateKeyByTokens(t, data)
		_, key, found := Duplicate(data)
		if found != want || key != wantKey {
			t.Fatalf("Duplicate(%q) = %q, %v; the tokens say %q, %v", data, key, found, wantKey, want)
		}
	})
}

// duplicateKeyByTokens is duplicateKey by json.Decoder's tokens.
func duplicateKeyByTokens(t *testing.T, data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object    bool
		expectKey bool
		keys      map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", false
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", data, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return k, true
				}
				top.keys[k], top.expectKey = true, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, expectKey: true, keys: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expectKey = true
		}
	}
}
