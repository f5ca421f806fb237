package adapter

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcplive/adapter/internal/draw"
)

// TestExpandParseConvertRoundTrip checks, for random templates and random
// typed values, that expand, parse and convert give back exactly those
// values: parse returns the strings expand was given, and convert writes
// the bytes json.Marshal writes for the typed values in the command's shape.
// It runs the cases of seeds 1 to checks.
func TestExpandParseConvertRoundTrip(t *testing.T) {
	draw.ForEachSeed(t, checks, checkExpandParseConvert)
}

// FuzzExpandParseConvertRoundTrip checks the same on the templates and
// values the fuzzer's bytes decide.
func FuzzExpandParseConvertRoundTrip(f *testing.F) {
	f.Add([]byte{}) // no variable
	// Nine variables, three in the path, nulls, the smallest int32.
	f.Add([]byte("\x09\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09 path and query variables of every kind"))
	// The smallest int64 in the path.
	f.Add([]byte{3, 1, 0, 0, 1, 1, 4, 1, 1, 1, 2, 0, 0, 9, 3, 0, 2})
	draw.AddRandomInputs(f, 4, 256)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkExpandParseConvert(t, draw.FromBytes(data))
	})
}

func checkExpandParseConvert(t *testing.T, c *draw.Choices) {
	tpl := drawTemplate(c)
	texts := map[string]string{}
	want := map[string]any{}
	for _, v := range tpl.variables() {
		if !v.required && c.Bool() {
			continue
		}
		text, typed := drawValue(c, v)
		texts[v.name] = text
		if v.parent == "" {
			want[v.name] = typed
			continue
		}
		group, _ := want[v.parent].(map[string]any)
		if group == nil {
			group = map[string]any{}
			want[v.parent] = group
		}
		group[v.name] = typed
	}

	uri := tpl.expand(texts)
	values, err := tpl.parse(uri)
	if err != nil {
		t.Fatalf("parse(%q) of %s: %v", uri, tpl.raw, err)
	}
	if !maps.Equal(values, texts) {
		t.Fatalf("parse(%q) = %q; expanded from %q", uri, values, texts)
	}
	got, verr := tpl.convert(values)
	if verr != nil {
		t.Fatalf("convert(%q) of %s: %v", values, tpl.raw, verr)
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(wantJSON) {
		t.Fatalf("convert(%q) of %s = %s; want %s", values, tpl.raw, got, wantJSON)
	}
}

// drawTemplate draws a template of up to 3 path and 6 query variables of
// random kinds, some of them flattened from a struct argument.
func drawTemplate(c *draw.Choices) *uriTemplate {
	names := draw.Distinct(c, []string{"a", "b", "id", "page", "per_page", "q", "sort", "x_1", "zed", "Z"}, 0, 9)
	kinds := []varKind{kindString, kindInteger, kindNumber, kindBoolean, kindEnum}
	var vars []variable
	requiredLeft := 3
	for _, name := range names {
		v := variable{
			name:     name,
			kind:     draw.Pick(c, kinds),
			nullable: c.Bool(),
			parent:   draw.Pick(c, []string{"", "", "filter", "range"}),
		}
		if requiredLeft > 0 && c.Bool() {
			v.required = true
			requiredLeft--
		}
		switch v.kind {
		case kindInteger:
			v.goKind = draw.Pick(c, []reflect.Kind{
				reflect.Invalid, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			})
		case kindNumber:
			v.goKind = draw.Pick(c, []reflect.Kind{reflect.Invalid, reflect.Float32, reflect.Float64})
		case kindEnum:
			v.enum = draw.Distinct(c, []string{"asc", "desc", "null", "a b", "x/y", "50%", "k=v&w", "é", "😀", "+"}, 1, 4)
		}
		vars = append(vars, v)
	}
	return uriTestTemplate("cmd_"+strconv.Itoa(len(vars)), vars...)
}

// drawValue draws a value for v: the text a URI carries and the typed value
// json.Marshal should write for it.
func drawValue(c *draw.Choices, v variable) (string, any) {
	nullable := v.nullable && v.kind != kindString
	for _, e := range v.enum {
		if e == "null" {
			nullable = false
		}
	}
	if nullable && c.Intn(5) == 0 {
		return "null", nil
	}
	switch v.kind {
	case kindInteger:
		return drawInteger(c, v)
	case kindNumber:
		format := draw.Pick(c, []byte{'g', 'e', 'f'})
		if v.goKind == reflect.Float32 {
			f := draw.Finite32(c)
			if f == 0 {
				f = 0
			}
			return formatNumber(float64(f), format, 32), f
		}
		f := draw.Finite64(c)
		if f == 0 {
			f = 0
		}
		return formatNumber(f, format, 64), f
	case kindBoolean:
		b := c.Bool()
		return strconv.FormatBool(b), b
	case kindEnum:
		e := draw.Pick(c, v.enum)
		return e, e
	default:
		minLen := 0
		if v.required {
			minLen = 1 // a path segment cannot be empty
		}
		s := draw.RuneString(c, minLen, 24, func(c *draw.Choices) rune {
			if c.Bool() {
				return draw.AnyRune(c)
			}
			return draw.Pick(c, []rune("/%&=+?# \"\\<>\u2028é😀"))
		})
		return s, s
	}
}

// drawInteger draws an integer in the range of v's Go kind, spelled with up
// to two leading zeros.
func drawInteger(c *draw.Choices, v variable) (string, any) {
	bits, isSigned := intRange(v.goKind)
	var n json.Number
	if isSigned {
		n = json.Number(strconv.FormatInt(draw.Signed(c, bits), 10))
	} else {
		n = json.Number(strconv.FormatUint(draw.Unsigned(c, bits), 10))
	}
	zeros := strings.Repeat("0", c.IntRange(0, 2))
	if neg, ok := strings.CutPrefix(string(n), "-"); ok {
		return "-" + zeros + neg, n
	}
	return zeros + string(n), n
}

// formatNumber spells f in the given strconv format, except that plain
// notation is kept to moderate magnitudes: 'f' spells 1e308 with 309 digits,
// and the URI must stay under maxURILength.
func formatNumber(f float64, format byte, bits int) string {
	if format == 'f' && f != 0 && (math.Abs(f) < 1e-20 || math.Abs(f) > 1e20) {
		format = 'g'
	}
	return strconv.FormatFloat(f, format, -1, bits)
}

// TestExpandParseRoundTripStrings checks parse(expand(s)) == s for arbitrary
// strings in a path segment and a query value, the encoding alone. It runs
// the cases of seeds 1 to checks.
func TestExpandParseRoundTripStrings(t *testing.T) {
	draw.ForEachSeed(t, checks, func(t *testing.T, c *draw.Choices) {
		r := func(c *draw.Choices) rune {
			if c.Bool() {
				return draw.AnyRune(c)
			}
			return draw.Pick(c, []rune("/%&=+?#~-._ "))
		}
		checkStringsRoundTrip(t, draw.RuneString(c, 1, 40, r), draw.RuneString(c, 1, 40, r), draw.RuneString(c, 0, 40, r))
	})
}

// FuzzExpandParseRoundTripStrings checks the same on the fuzzer's strings.
func FuzzExpandParseRoundTripStrings(f *testing.F) {
	f.Add("2024-01-01", "2024-12-31", "")
	f.Add("a/b", "%2F", "x&y=z")
	f.Add("é😀\u2028", " +?#", "\x00\ufeff\u202e")
	f.Fuzz(func(t *testing.T, from, to, status string) {
		if from == "" || to == "" || !utf8.ValidString(from) || !utf8.ValidString(to) || !utf8.ValidString(status) {
			t.Skip("a path segment cannot be empty, and parse refuses what is not UTF-8 (FuzzParseConvert checks that)")
		}
		checkStringsRoundTrip(t, from, to, status)
	})
}

func checkStringsRoundTrip(t *testing.T, from, to, status string) {
	tpl := tplOrdersBetween()
	tpl.query[0] = variable{name: "status", kind: kindString}
	args := map[string]string{"from": from, "to": to, "status": status}
	uri := tpl.expand(args)
	got, err := tpl.parse(uri)
	if err != nil {
		t.Fatalf("parse(%q): %v", uri, err)
	}
	if !maps.Equal(got, args) {
		t.Fatalf("parse(expand(%q)) = %q", args, got)
	}
	if again := tpl.expand(got); again != uri {
		t.Fatalf("expand is not stable: %q then %q", uri, again)
	}
}
