package adapter

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestExpandParseConvertRoundTrip checks, for random templates and random
// typed values, that expand, parse and convert give back exactly those
// values: parse returns the strings expand was given, and convert writes
// the bytes json.Marshal writes for the typed values in the command's shape.
func TestExpandParseConvertRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tpl := drawTemplate(rt)
		texts := map[string]string{}
		want := map[string]any{}
		for _, v := range tpl.variables() {
			if !v.required && rapid.Bool().Draw(rt, "present "+v.name) {
				continue
			}
			text, typed := drawValue(rt, v)
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
			rt.Fatalf("parse(%q) of %s: %v", uri, tpl.raw, err)
		}
		if !maps.Equal(values, texts) {
			rt.Fatalf("parse(%q) = %q; expanded from %q", uri, values, texts)
		}
		got, verr := tpl.convert(values)
		if verr != nil {
			rt.Fatalf("convert(%q) of %s: %v", values, tpl.raw, verr)
		}
		wantJSON, err := json.Marshal(want)
		if err != nil {
			rt.Fatal(err)
		}
		if string(got) != string(wantJSON) {
			rt.Fatalf("convert(%q) of %s = %s; want %s", values, tpl.raw, got, wantJSON)
		}
	})
}

// drawTemplate draws a template of up to 3 path and 6 query variables of
// random kinds, some of them flattened from a struct argument.
func drawTemplate(rt *rapid.T) *uriTemplate {
	names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{
		"a", "b", "id", "page", "per_page", "q", "sort", "x_1", "zed", "Z",
	}), 0, 9, rapid.ID[string]).Draw(rt, "names")
	kinds := []varKind{kindString, kindInteger, kindNumber, kindBoolean, kindEnum}
	var vars []variable
	requiredLeft := 3
	for _, name := range names {
		v := variable{
			name:     name,
			kind:     rapid.SampledFrom(kinds).Draw(rt, name+" kind"),
			nullable: rapid.Bool().Draw(rt, name+" nullable"),
			parent:   rapid.SampledFrom([]string{"", "", "filter", "range"}).Draw(rt, name+" parent"),
		}
		if requiredLeft > 0 && rapid.Bool().Draw(rt, name+" required") {
			v.required = true
			requiredLeft--
		}
		switch v.kind {
		case kindInteger:
			v.goKind = rapid.SampledFrom([]reflect.Kind{
				reflect.Invalid, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			}).Draw(rt, name+" go kind")
		case kindNumber:
			v.goKind = rapid.SampledFrom([]reflect.Kind{reflect.Invalid, reflect.Float32, reflect.Float64}).Draw(rt, name+" go kind")
		case kindEnum:
			v.enum = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{
				"asc", "desc", "null", "a b", "x/y", "50%", "k=v&w", "é", "😀", "+",
			}), 1, 4, rapid.ID[string]).Draw(rt, name+" enum")
		}
		vars = append(vars, v)
	}
	return uriTestTemplate("cmd_"+strconv.Itoa(len(vars)), vars...)
}

// drawValue draws a value for v: the text a URI carries and the typed value
// json.Marshal should write for it.
func drawValue(rt *rapid.T, v variable) (string, any) {
	name := v.name
	nullable := v.nullable && v.kind != kindString
	for _, c := range v.enum {
		if c == "null" {
			nullable = false
		}
	}
	if nullable && rapid.IntRange(0, 4).Draw(rt, name+" null") == 0 {
		return "null", nil
	}
	switch v.kind {
	case kindInteger:
		bits, signed := intRange(v.goKind)
		var n json.Number
		if signed {
			lim := int64(1)<<(bits-1) - 1
			i := rapid.Int64Range(-lim-1, lim).Draw(rt, name)
			n = json.Number(strconv.FormatInt(i, 10))
		} else {
			u := rapid.Uint64Range(0, math.MaxUint64>>(64-bits)).Draw(rt, name)
			n = json.Number(strconv.FormatUint(u, 10))
		}
		zeros := strings.Repeat("0", rapid.IntRange(0, 2).Draw(rt, name+" zeros"))
		if neg, ok := strings.CutPrefix(string(n), "-"); ok {
			return "-" + zeros + neg, n
		}
		return zeros + string(n), n
	case kindNumber:
		format := rapid.SampledFrom([]byte{'g', 'e', 'f'}).Draw(rt, name+" format")
		if v.goKind == reflect.Float32 {
			f := rapid.Float32().Filter(isFinite32).Draw(rt, name)
			if f == 0 {
				f = 0
			}
			return formatNumber(float64(f), format, 32), f
		}
		f := rapid.Float64().Filter(isFinite64).Draw(rt, name)
		if f == 0 {
			f = 0
		}
		return formatNumber(f, format, 64), f
	case kindBoolean:
		b := rapid.Bool().Draw(rt, name)
		return strconv.FormatBool(b), b
	case kindEnum:
		c := rapid.SampledFrom(v.enum).Draw(rt, name)
		return c, c
	default:
		minLen := 0
		if v.required {
			minLen = 1 // a path segment cannot be empty
		}
		s := rapid.StringOfN(rapid.OneOf(
			rapid.Rune(),
			rapid.SampledFrom([]rune("/%&=+?# \"\\<>\u2028é😀")),
		), minLen, 24, -1).Draw(rt, name)
		return s, s
	}
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

// isFinite64 keeps NaN and ±Inf out of drawn numbers: a URI cannot carry them.
func isFinite64(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// isFinite32 is isFinite64 for float32.
func isFinite32(f float32) bool { return isFinite64(float64(f)) }

// TestExpandParseRoundTripStrings checks parse(expand(s)) == s for arbitrary
// strings in a path segment and a query value, the encoding alone.
func TestExpandParseRoundTripStrings(t *testing.T) {
	tpl := tplOrdersBetween()
	tpl.query[0] = variable{name: "status", kind: kindString}
	rapid.Check(t, func(rt *rapid.T) {
		alphabet := rapid.OneOf(rapid.Rune(), rapid.SampledFrom([]rune("/%&=+?#~-._ ")))
		args := map[string]string{
			"from":   rapid.StringOfN(alphabet, 1, 40, -1).Draw(rt, "from"),
			"to":     rapid.StringOfN(alphabet, 1, 40, -1).Draw(rt, "to"),
			"status": rapid.StringOfN(alphabet, 0, 40, -1).Draw(rt, "status"),
		}
		uri := tpl.expand(args)
		got, err := tpl.parse(uri)
		if err != nil {
			rt.Fatalf("parse(%q): %v", uri, err)
		}
		if !maps.Equal(got, args) {
			rt.Fatalf("parse(expand(%q)) = %q", args, got)
		}
		if again := tpl.expand(got); again != uri {
			rt.Fatalf("expand is not stable: %q then %q", uri, again)
		}
	})
}
