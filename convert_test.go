package adapter

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// convertCase is one URI parsed and converted: want is the canonical JSON,
// or wantFields the fields of the *ValidationError, in order, with
// wantMessage a piece of the first field's message.
type convertCase struct {
	name        string
	tpl         *uriTemplate
	uri         string
	want        string
	wantFields  []string
	wantMessage string
}

func convertCases() []convertCase {
	show, index, orders := tplCustomersShow(), tplCustomersIndex(), tplOrdersBetween()
	products, kinds, amounts := tplProductsSearch(), tplKinds(), tplAmounts()
	return []convertCase{
		// Integers.
		{name: "integer", tpl: show, uri: "app://customers_show/12", want: `{"id":12}`},
		{name: "leading zeros", tpl: show, uri: "app://customers_show/0012", want: `{"id":12}`},
		{name: "negative zero", tpl: show, uri: "app://customers_show/-0", want: `{"id":0}`},
		{name: "negative", tpl: show, uri: "app://customers_show/-7", want: `{"id":-7}`},
		{name: "beyond float64 precision", tpl: show, uri: "app://customers_show/9007199254740993", want: `{"id":9007199254740993}`},
		{name: "int64 max", tpl: show, uri: "app://customers_show/9223372036854775807", want: `{"id":9223372036854775807}`},
		{name: "int64 min", tpl: show, uri: "app://customers_show/-9223372036854775808", want: `{"id":-9223372036854775808}`},
		{name: "int64 overflow", tpl: show, uri: "app://customers_show/9223372036854775808",
			wantFields: []string{"id"}, wantMessage: "must be between -9223372036854775808 and 9223372036854775807"},
		{name: "uint64 overflow of the digits", tpl: show, uri: "app://customers_show/99999999999999999999999",
			wantFields: []string{"id"}, wantMessage: "must be between"},
		{name: "fraction", tpl: show, uri: "app://customers_show/1.5", wantFields: []string{"id"}, wantMessage: "must be an integer"},
		{name: "trailing letters", tpl: show, uri: "app://customers_show/12abc", wantFields: []string{"id"}, wantMessage: "must be an integer"},
		{name: "plus sign", tpl: show, uri: "app://customers_show/+1", wantFields: []string{"id"}},
		{name: "leading space", tpl: show, uri: "app://customers_show/%201", wantFields: []string{"id"}},
		{name: "trailing space", tpl: show, uri: "app://customers_show/1%20", wantFields: []string{"id"}},
		{name: "exponent", tpl: show, uri: "app://customers_show/1e3", wantFields: []string{"id"}},
		{name: "hex", tpl: show, uri: "app://customers_show/0x10", wantFields: []string{"id"}},
		{name: "lone minus", tpl: show, uri: "app://customers_show/-", wantFields: []string{"id"}},
		{name: "empty integer", tpl: index, uri: "app://customers_index?page=", wantFields: []string{"page"}, wantMessage: "must be an integer"},
		{name: "uint8 max", tpl: kinds, uri: "app://kinds/255", want: `{"small":255}`},
		{name: "uint8 overflow", tpl: kinds, uri: "app://kinds/256", wantFields: []string{"small"}, wantMessage: "must be between 0 and 255"},
		{name: "uint8 negative", tpl: kinds, uri: "app://kinds/-1", wantFields: []string{"small"}, wantMessage: "must be between 0 and 255"},
		// As a tools/call: encoding/json refuses -0 for an unsigned field.
		{name: "uint8 negative zero", tpl: kinds, uri: "app://kinds/-0", wantFields: []string{"small"}, wantMessage: "must be between 0 and 255"},
		{name: "int8 bounds", tpl: kinds, uri: "app://kinds/0?tiny=-128", want: `{"small":0,"tiny":-128}`},
		{name: "int8 overflow", tpl: kinds, uri: "app://kinds/0?tiny=128", wantFields: []string{"tiny"}, wantMessage: "must be between -128 and 127"},
		{name: "uint64 max", tpl: kinds, uri: "app://kinds/1?big=18446744073709551615", want: `{"big":18446744073709551615,"small":1}`},
		{name: "uint64 overflow", tpl: kinds, uri: "app://kinds/1?big=18446744073709551616",
			wantFields: []string{"big"}, wantMessage: "must be between 0 and 18446744073709551615"},
		{name: "int32 overflow", tpl: kinds, uri: "app://kinds/1?limit=2147483648",
			wantFields: []string{"limit"}, wantMessage: "must be between -2147483648 and 2147483647"},

		// Numbers.
		{name: "numbers", tpl: products, uri: "app://products_search?min=1.50&max=1e2", want: `{"filter":{"max":100,"min":1.5}}`},
		{name: "number notations", tpl: products, uri: "app://products_search?min=-0.0&max=1e21", want: `{"filter":{"max":1e+21,"min":0}}`},
		{name: "small number", tpl: products, uri: "app://products_search?min=0.0000001&max=.5", want: `{"filter":{"max":0.5,"min":1e-7}}`},
		{name: "number underflows to zero", tpl: products, uri: "app://products_search?min=1e-400", want: `{"filter":{"min":0}}`},
		{name: "NaN", tpl: products, uri: "app://products_search?min=NaN", wantFields: []string{"min"}, wantMessage: "must be a number"},
		{name: "Inf", tpl: products, uri: "app://products_search?min=Inf", wantFields: []string{"min"}},
		{name: "infinity", tpl: products, uri: "app://products_search?min=-infinity", wantFields: []string{"min"}},
		{name: "hex float", tpl: products, uri: "app://products_search?min=0x1p3", wantFields: []string{"min"}},
		{name: "underscore", tpl: products, uri: "app://products_search?min=1_0", wantFields: []string{"min"}},
		{name: "plus number", tpl: products, uri: "app://products_search?min=%2B1.5", wantFields: []string{"min"}},
		{name: "empty number", tpl: products, uri: "app://products_search?min=", wantFields: []string{"min"}},
		{name: "spaced number", tpl: products, uri: "app://products_search?min=%201", wantFields: []string{"min"}},
		{name: "two points", tpl: products, uri: "app://products_search?min=1.2.3", wantFields: []string{"min"}},
		{name: "float64 overflow", tpl: products, uri: "app://products_search?max=1e400", wantFields: []string{"max"}, wantMessage: "must be a finite number"},
		{name: "float32", tpl: kinds, uri: "app://kinds/1?ratio=1.1", want: `{"ratio":1.1,"small":1}`},
		{name: "float32 spelled long", tpl: kinds, uri: "app://kinds/1?ratio=1.10000002384", want: `{"ratio":1.1,"small":1}`},
		{name: "float32 overflow", tpl: kinds, uri: "app://kinds/1?ratio=3.5e38", wantFields: []string{"ratio"}, wantMessage: "must be between -3.4028235e+38 and 3.4028235e+38"},

		// json.Number: the number as written, in JSON's grammar, never
		// through a float; no range but the scale.
		{name: "json.Number keeps every digit", tpl: amounts, uri: "app://amounts/12345678901234567890.123456789",
			want: `{"amount":12345678901234567890.123456789}`},
		{name: "json.Number keeps its spelling", tpl: amounts, uri: "app://amounts/12.50?max=1E%2B5", want: `{"amount":12.50,"max":1E+5}`},
		{name: "json.Number in JSON's grammar", tpl: amounts, uri: "app://amounts/-007.?max=.5", want: `{"amount":-7,"max":0.5}`},
		{name: "json.Number negative zero", tpl: amounts, uri: "app://amounts/-0", want: `{"amount":-0}`},
		{name: "json.Number beyond float64", tpl: amounts, uri: "app://amounts/1e400?max=-1e-400", want: `{"amount":1e400,"max":-1e-400}`},
		{name: "json.Number null", tpl: amounts, uri: "app://amounts/1?max=null", want: `{"amount":1,"max":null}`},
		{name: "json.Number not a number", tpl: amounts, uri: "app://amounts/12abc?max=x",
			wantFields: []string{"amount", "max"}, wantMessage: "must be a number"},
		{name: "json.Number nullable message", tpl: amounts, uri: "app://amounts/1?max=x", wantFields: []string{"max"}, wantMessage: "must be a number or null"},
		{name: "json.Number NaN", tpl: amounts, uri: "app://amounts/NaN", wantFields: []string{"amount"}, wantMessage: "must be a number"},
		{name: "json.Number hex", tpl: amounts, uri: "app://amounts/0x10", wantFields: []string{"amount"}},
		{name: "json.Number plus", tpl: amounts, uri: "app://amounts/%2B1", wantFields: []string{"amount"}},
		{name: "json.Number empty", tpl: amounts, uri: "app://amounts/1?max=", wantFields: []string{"max"}},
		{name: "json.Number out of scale", tpl: amounts, uri: "app://amounts/1e1001", wantFields: []string{"amount"}, wantMessage: outOfScaleMessage},

		// Booleans, enums, strings.
		{name: "booleans", tpl: kinds, uri: "app://kinds/1?flag=false", want: `{"flag":false,"small":1}`},
		{name: "boolean upper case", tpl: kinds, uri: "app://kinds/1?flag=TRUE", wantFields: []string{"flag"}, wantMessage: "must be true or false"},
		{name: "boolean digit", tpl: kinds, uri: "app://kinds/1?flag=1", wantFields: []string{"flag"}},
		{name: "enum", tpl: orders, uri: "app://orders_between/a/b?status=shipped", want: `{"from":"a","status":"shipped","to":"b"}`},
		{name: "enum not a constant", tpl: orders, uri: "app://orders_between/a/b?status=lost",
			wantFields: []string{"status"}, wantMessage: `must be one of "pending", "paid", "shipped"`},
		{name: "enum is case-sensitive", tpl: orders, uri: "app://orders_between/a/b?status=Paid", wantFields: []string{"status"}},
		{name: "string escaping", tpl: index, uri: "app://customers_index?search=%3Ca%26b%3E%22%5C%0A%E2%80%A8%7F",
			want: `{"search":"\u003ca\u0026b\u003e\"\\\n\u2028` + "\x7f" + `"}`},
		{name: "string with encoded delimiters", tpl: orders, uri: "app://orders_between/a%2Fb/%25?status=paid",
			want: `{"from":"a/b","status":"paid","to":"%"}`},

		// Nullable.
		{name: "nullable integer null", tpl: kinds, uri: "app://kinds/1?limit=null", want: `{"limit":null,"small":1}`},
		{name: "nullable integer", tpl: kinds, uri: "app://kinds/1?limit=-5", want: `{"limit":-5,"small":1}`},
		{name: "nullable integer message", tpl: kinds, uri: "app://kinds/1?limit=x", wantFields: []string{"limit"}, wantMessage: "must be an integer or null"},
		{name: "integer that is not nullable", tpl: kinds, uri: "app://kinds/null", wantFields: []string{"small"}, wantMessage: "must be an integer"},
		{name: "nullable number null", tpl: kinds, uri: "app://kinds/1?score=null", want: `{"score":null,"small":1}`},
		{name: "nullable enum null", tpl: kinds, uri: "app://kinds/1?level=null", want: `{"level":null,"small":1}`},
		{name: "nullable enum message", tpl: kinds, uri: "app://kinds/1?level=mid", wantFields: []string{"level"}, wantMessage: `must be one of "low", "high" or null`},
		{name: "enum with a null constant", tpl: kinds, uri: "app://kinds/1?mode=null", want: `{"mode":"null","small":1}`},
		{name: "nullable string stays a string", tpl: kinds, uri: "app://kinds/1?note=null", want: `{"note":"null","small":1}`},

		// Shape and canonical form.
		{name: "all five", tpl: index, uri: "app://customers_index?direction=desc&page=3&per_page=25&search=ada%20lovelace&sort=name",
			want: `{"direction":"desc","page":3,"per_page":25,"search":"ada lovelace","sort":"name"}`},
		{name: "same arguments spelled otherwise", tpl: index, uri: "app://customers_index?sort=name&search=ada%20lovel%61ce&per_page=025&page=03&direction=desc",
			want: `{"direction":"desc","page":3,"per_page":25,"search":"ada lovelace","sort":"name"}`},
		{name: "no arguments", tpl: index, uri: "app://customers_index", want: `{}`},
		{name: "flattened struct", tpl: products, uri: "app://products_search?q=lamp&min=1&max=10.25&category=home",
			want: `{"category":"home","filter":{"max":10.25,"min":1},"q":"lamp"}`},
		{name: "half a flattened struct", tpl: products, uri: "app://products_search?min=2", want: `{"filter":{"min":2}}`},
		{name: "flattened struct absent", tpl: products, uri: "app://products_search?q=lamp", want: `{"q":"lamp"}`},
		{name: "every kind", tpl: kinds, uri: "app://kinds/7?tiny=-1&score=2.5&ratio=0.25&note=n&mode=on&limit=null&level=high&flag=true&big=0",
			want: `{"big":0,"flag":true,"level":"high","limit":null,"mode":"on","note":"n","ratio":0.25,"score":2.5,"small":7,"tiny":-1}`},

		// Every failing field is reported, in template order.
		{name: "four failures", tpl: index, uri: "app://customers_index?sort=bogus&per_page=1.5&page=x&direction=up&search=ok",
			wantFields: []string{"direction", "page", "per_page", "sort"}, wantMessage: `must be one of "asc", "desc"`},
		{name: "path and query failures", tpl: kinds, uri: "app://kinds/300?tiny=x&flag=yes&ratio=NaN&level=null",
			wantFields: []string{"small", "flag", "ratio", "tiny"}, wantMessage: "must be between 0 and 255"},
		{name: "both flattened fields fail", tpl: products, uri: "app://products_search?min=a&max=b&q=ok",
			wantFields: []string{"max", "min"}},
	}
}

// TestConvert runs convertCases through parse and convert.
func TestConvert(t *testing.T) {
	for _, c := range convertCases() {
		t.Run(c.name, func(t *testing.T) {
			values, err := c.tpl.parse(c.uri)
			if err != nil {
				t.Fatalf("parse(%q): %v", c.uri, err)
			}
			got, verr := c.tpl.convert(values)
			if c.wantFields != nil {
				if verr == nil {
					t.Fatalf("convert(%q) = %s; want errors for %q", c.uri, got, c.wantFields)
				}
				var fields []string
				for _, fe := range verr.Errors {
					fields = append(fields, fe.Field)
				}
				if !slices.Equal(fields, c.wantFields) {
					t.Fatalf("convert(%q) failed fields %q; want %q (%v)", c.uri, fields, c.wantFields, verr)
				}
				if c.wantMessage != "" && !strings.Contains(verr.Errors[0].Message, c.wantMessage) {
					t.Fatalf("convert(%q) message %q; want it to contain %q", c.uri, verr.Errors[0].Message, c.wantMessage)
				}
				return
			}
			if verr != nil {
				t.Fatalf("convert(%q): %v", c.uri, verr)
			}
			if string(got) != c.want {
				t.Fatalf("convert(%q) = %s; want %s", c.uri, got, c.want)
			}
			assertCanonical(t, got)
		})
	}
}

// assertCanonical checks that got is exactly what json.Marshal writes for
// the same value, numbers kept as their text.
func assertCanonical(t testing.TB, got []byte) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(got)))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("convert wrote invalid JSON %s: %v", got, err)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(got) {
		t.Fatalf("convert wrote %s; json.Marshal writes %s", got, again)
	}
}

// TestConvertValuesNotFromParse checks the failures parse never lets
// through: a missing required variable and keys naming no variable.
func TestConvertValuesNotFromParse(t *testing.T) {
	_, verr := tplOrdersBetween().convert(map[string]string{"to": "b", "zeta": "1", "alpha": "2"})
	if verr == nil {
		t.Fatal("convert accepted a missing required variable and unknown ones")
	}
	want := []FieldError{
		{Field: "from", Message: "is required"},
		{Field: "alpha", Message: "is not a variable of app://orders_between/{from}/{to}{?status}"},
		{Field: "zeta", Message: "is not a variable of app://orders_between/{from}/{to}{?status}"},
	}
	if !slices.Equal(verr.Errors, want) {
		t.Fatalf("errors %+v; want %+v", verr.Errors, want)
	}
	got, verr := uriTestTemplate("ping").convert(nil)
	if verr != nil || string(got) != "{}" {
		t.Fatalf("convert of no variables = %s, %v; want {}", got, verr)
	}
}

// TestAppendJSONStringMatchesEncodingJSON checks the escaping that keeps
// convert canonical.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", "quote\" back\\slash", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"<script>&amp;</script>", "\u2028\u2029", "é😀", "bad \xff utf8 \xc3", "\xed\xa0\x80",
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s; json.Marshal gives %s", s, got, want)
		}
	}
}

// TestAppendFloatMatchesEncodingJSON checks the number formatting that
// keeps convert canonical, in both widths.
func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1.5, 1e-6, 9.99999e-7, 1e-7, 1e20, 1e21, 123456789e15, 5e-324, 1.7976931348623157e308, -2.5e-10} {
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f, 64); string(got) != string(want) {
			t.Errorf("appendFloat(%v, 64) = %s; json.Marshal gives %s", f, got, want)
		}
		f32 := float32(f)
		if math.IsInf(float64(f32), 0) {
			continue
		}
		want, _ = json.Marshal(f32)
		if got := appendFloat(nil, float64(f32), 32); string(got) != string(want) {
			t.Errorf("appendFloat(%v, 32) = %s; json.Marshal gives %s", f32, got, want)
		}
	}
}
