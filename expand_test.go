package adapter

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcplive/adapter/internal/draw"
)

// uriTestTemplate lays vars out as template.go does (required ones in the
// path, optional ones in the query, each group in name order), so these
// tests do not depend on schema reflection.
func uriTestTemplate(command string, vars ...variable) *uriTemplate {
	t := &uriTemplate{scheme: "app", command: command}
	for _, v := range vars {
		if v.required {
			t.path = append(t.path, v)
		} else {
			t.query = append(t.query, v)
		}
	}
	byName := func(a, b variable) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(t.path, byName)
	slices.SortFunc(t.query, byName)
	t.raw = t.format()
	return t
}

// tplCustomersShow is app://customers_show/{id}.
func tplCustomersShow() *uriTemplate {
	return uriTestTemplate("customers_show",
		variable{name: "id", kind: kindInteger, required: true, goKind: reflect.Int64})
}

// tplCustomersIndex is app://customers_index{?direction,page,per_page,search,sort}.
func tplCustomersIndex() *uriTemplate {
	return uriTestTemplate("customers_index",
		variable{name: "direction", kind: kindEnum, enum: []string{"asc", "desc"}},
		variable{name: "page", kind: kindInteger, goKind: reflect.Int},
		variable{name: "per_page", kind: kindInteger, goKind: reflect.Int},
		variable{name: "search", kind: kindString, goKind: reflect.String},
		variable{name: "sort", kind: kindEnum, enum: []string{"name", "created_at"}},
	)
}

// tplOrdersBetween is app://orders_between/{from}/{to}{?status}.
func tplOrdersBetween() *uriTemplate {
	return uriTestTemplate("orders_between",
		variable{name: "from", kind: kindString, required: true, goKind: reflect.String},
		variable{name: "to", kind: kindString, required: true, goKind: reflect.String},
		variable{name: "status", kind: kindEnum, enum: []string{"pending", "paid", "shipped"}},
	)
}

// tplProductsSearch has a struct argument filter{min,max} flattened into
// the variables max and min: app://products_search{?category,max,min,q}.
func tplProductsSearch() *uriTemplate {
	return uriTestTemplate("products_search",
		variable{name: "category", kind: kindString},
		variable{name: "max", parent: "filter", kind: kindNumber, goKind: reflect.Float64},
		variable{name: "min", parent: "filter", kind: kindNumber, goKind: reflect.Float64},
		variable{name: "q", kind: kindString},
	)
}

// tplKinds covers the remaining kinds and Go ranges:
// app://kinds/{small}{?big,flag,level,limit,mode,note,ratio,score,tiny}.
func tplKinds() *uriTemplate {
	return uriTestTemplate("kinds",
		variable{name: "small", kind: kindInteger, required: true, goKind: reflect.Uint8},
		variable{name: "big", kind: kindInteger, goKind: reflect.Uint64},
		variable{name: "flag", kind: kindBoolean, goKind: reflect.Bool},
		variable{name: "level", kind: kindEnum, enum: []string{"low", "high"}, nullable: true},
		variable{name: "limit", kind: kindInteger, nullable: true, goKind: reflect.Int32},
		variable{name: "mode", kind: kindEnum, enum: []string{"null", "on"}, nullable: true},
		variable{name: "note", kind: kindString, nullable: true},
		variable{name: "ratio", kind: kindNumber, goKind: reflect.Float32},
		variable{name: "score", kind: kindNumber, nullable: true},
		variable{name: "tiny", kind: kindInteger, goKind: reflect.Int8},
	)
}

// tplAmounts is app://amounts/{amount}{?max}, of json.Number fields.
func tplAmounts() *uriTemplate {
	return uriTestTemplate("amounts",
		variable{name: "amount", kind: kindNumber, required: true, goKind: reflect.String, jsonNumber: true},
		variable{name: "max", kind: kindNumber, nullable: true, goKind: reflect.String, jsonNumber: true})
}

// TestSplitCommand checks which URIs name a command of the scheme.
func TestSplitCommand(t *testing.T) {
	cases := []struct {
		uri  string
		want string
		ok   bool
	}{
		{"app://customers_show/12", "customers_show", true},
		{"app://customers_index", "customers_index", true},
		{"app://customers_index?page=2", "customers_index", true},
		{"app://customers_index/", "customers_index", true},
		{"app://", "", false},
		{"app:///12", "", false},
		{"app://?page=1", "", false},
		{"app:/customers_show", "", false},
		{"ap://customers_show", "", false},
		{"http://customers_show", "", false},
		{"app://cust%6Fmers_show/1", "", false},
		{"app://customers_show#x", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := splitCommand("app", c.uri)
		if got != c.want || ok != c.ok {
			t.Errorf("splitCommand(%q) = %q, %v; want %q, %v", c.uri, got, ok, c.want, c.ok)
		}
	}
}

// TestSplitCommandAllocatesNothing guards the cost of the check every
// resources/read pays.
func TestSplitCommandAllocatesNothing(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		splitCommand("app", "app://customers_index?page=2")
	})
	if n != 0 {
		t.Fatalf("splitCommand allocates %v times", n)
	}
}

// parseCase is one URI given to parse: want is the decoded values, or
// wantErr a piece of the *uriError's reason.
type parseCase struct {
	name    string
	tpl     *uriTemplate
	uri     string
	want    map[string]string
	wantErr string
}

func parseCases() []parseCase {
	show, index, orders := tplCustomersShow(), tplCustomersIndex(), tplOrdersBetween()
	long := "app://customers_index?search=" + strings.Repeat("a", maxURILength-len("app://customers_index?search="))
	return []parseCase{
		// Valid.
		{"path variable", show, "app://customers_show/12", map[string]string{"id": "12"}, ""},
		{"no query", index, "app://customers_index", map[string]string{}, ""},
		{"all query parameters, any order", index,
			"app://customers_index?sort=name&search=ada&per_page=25&page=3&direction=desc",
			map[string]string{"sort": "name", "search": "ada", "per_page": "25", "page": "3", "direction": "desc"}, ""},
		{"percent-decoded space", index, "app://customers_index?search=ada%20lovelace",
			map[string]string{"search": "ada lovelace"}, ""},
		{"plus is a plus", index, "app://customers_index?search=a+b", map[string]string{"search": "a+b"}, ""},
		{"encoded delimiters", index, "app://customers_index?search=a%2Fb%26c%3Dd%25e%3F%23%2B",
			map[string]string{"search": "a/b&c=d%e?#+"}, ""},
		{"split at the first =", index, "app://customers_index?search=a=b", map[string]string{"search": "a=b"}, ""},
		{"slash and ? in a query value", index, "app://customers_index?search=a/b?c",
			map[string]string{"search": "a/b?c"}, ""},
		{"UTF-8, lower-case hex", index, "app://customers_index?search=%c3%a9%F0%9F%98%80",
			map[string]string{"search": "é😀"}, ""},
		{"raw UTF-8", index, "app://customers_index?search=é", map[string]string{"search": "é"}, ""},
		{"empty value", index, "app://customers_index?search=", map[string]string{"search": ""}, ""},
		{"two path segments and a query", orders, "app://orders_between/2024-01-01/2024-12-31?status=paid",
			map[string]string{"from": "2024-01-01", "to": "2024-12-31", "status": "paid"}, ""},
		{"encoded slash in a segment", orders, "app://orders_between/a%2Fb/c%3Fd",
			map[string]string{"from": "a/b", "to": "c?d"}, ""},
		{"exactly 2048 bytes", index, long, map[string]string{"search": long[len("app://customers_index?search="):]}, ""},

		// Invalid.
		{"longer than 2048 bytes", index, long + "a", nil, "URI is 2049 bytes, longer than the 2048 allowed"},
		{"other scheme", show, "http://customers_show/12", nil, "does not begin with app://customers_show"},
		{"scheme is case-sensitive", show, "APP://customers_show/12", nil, "does not begin with app://customers_show"},
		{"longer command", show, "app://customers_showx/12", nil, "does not begin with app://customers_show"},
		{"other command", show, "app://customers/12", nil, "does not begin with app://customers_show"},
		{"fragment", show, "app://customers_show/12#top", nil, `fragment ("#" at byte 23) not allowed`},
		{"fragment in query", index, "app://customers_index?search=a#b", nil, "fragment"},
		{"missing segment", orders, "app://orders_between/2024-01-01", nil,
			"expected 2 path segments after app://orders_between, got 1"},
		{"no segment", show, "app://customers_show", nil, "expected 1 path segment after app://customers_show, got 0"},
		{"no segment before query", orders, "app://orders_between?status=paid", nil, "expected 2 path segments"},
		{"extra segment", orders, "app://orders_between/a/b/c", nil, "expected 2 path segments after app://orders_between, got 3"},
		{"trailing slash", show, "app://customers_show/12/", nil, "trailing slash: expected 1 path segment"},
		{"trailing slash before query", orders, "app://orders_between/a/b/?status=paid", nil, "trailing slash"},
		{"trailing slash without path variables", index, "app://customers_index/", nil, "trailing slash: expected 0 path segments"},
		{"segment without path variables", index, "app://customers_index/x", nil, "expected 0 path segments after app://customers_index, got 1"},
		{"empty segment", orders, "app://orders_between//b", nil, "path segment {from} is empty"},
		{"empty last segment", show, "app://customers_show/", nil, "path segment {id} is empty"},
		{"unknown parameter", index, "app://customers_index?bogus=1", nil, `unknown query parameter "bogus"`},
		{"path variable in the query", show, "app://customers_show/12?id=3", nil, `unknown query parameter "id"`},
		{"encoded parameter name", index, "app://customers_index?p%61ge=1", nil, `unknown query parameter "p%61ge"`},
		{"empty parameter name", index, "app://customers_index?=1", nil, `unknown query parameter ""`},
		{"repeated parameter", index, "app://customers_index?page=1&sort=name&page=2", nil, `query parameter "page" given twice`},
		{"repeated with the same value", index, "app://customers_index?page=1&page=1", nil, "given twice"},
		{"parameter without =", index, "app://customers_index?page", nil, `query parameter "page" has no "="`},
		{"empty query", index, "app://customers_index?", nil, `empty query after "?"`},
		{"empty query on a path template", show, "app://customers_show/1?", nil, "empty query"},
		{"double &", index, "app://customers_index?page=1&&sort=name", nil, "empty query parameter at byte 29"},
		{"leading &", index, "app://customers_index?&page=1", nil, "empty query parameter at byte 22"},
		{"trailing &", index, "app://customers_index?page=1&", nil, "empty query parameter at byte 29"},
		{"bad hex", index, "app://customers_index?search=%zz", nil, "invalid percent-encoding at byte 29"},
		{"truncated escape", index, "app://customers_index?search=ab%4", nil, "invalid percent-encoding at byte 31"},
		{"lone %", index, "app://customers_index?search=%", nil, "invalid percent-encoding at byte 29"},
		{"bad escape after a good one", orders, "app://orders_between/%41/b%g1", nil, "invalid percent-encoding at byte 26"},
		{"decoded invalid UTF-8", index, "app://customers_index?search=%FF", nil, `query parameter "search" is not valid UTF-8`},
		{"truncated UTF-8 sequence", index, "app://customers_index?search=%C3", nil, "not valid UTF-8"},
		{"raw invalid UTF-8 in a segment", orders, "app://orders_between/\xff/b", nil, "path segment {from} is not valid UTF-8"},
	}
}

// TestParse runs parseCases: the values of valid URIs, the reason for
// invalid ones.
func TestParse(t *testing.T) {
	for _, c := range parseCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.tpl.parse(c.uri)
			if c.wantErr != "" {
				var ue *uriError
				if !errors.As(err, &ue) {
					t.Fatalf("parse(%q) = %v, %v; want a *uriError", c.uri, got, err)
				}
				if !strings.Contains(ue.reason, c.wantErr) {
					t.Fatalf("parse(%q) reason %q; want it to contain %q", c.uri, ue.reason, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q): %v", c.uri, err)
			}
			if !maps.Equal(got, c.want) {
				t.Fatalf("parse(%q) = %q; want %q", c.uri, got, c.want)
			}
		})
	}
}

// TestURIErrorMessage checks the message names the URI, shortened and
// quoted when needed, and the reason.
func TestURIErrorMessage(t *testing.T) {
	_, err := tplCustomersIndex().parse("app://customers_index?bogus=1")
	if got, want := err.Error(), `resource not found: app://customers_index?bogus=1: unknown query parameter "bogus"`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	long := "app://customers_index?search=" + strings.Repeat("é", 1500)
	_, err = tplCustomersIndex().parse(long)
	msg := err.Error()
	if len(msg) > 300 || !strings.HasSuffix(msg, "…: URI is 3029 bytes, longer than the 2048 allowed") {
		t.Errorf("long URI error = %q", msg)
	}
	_, err = tplCustomersShow().parse("app://customers_show/1\n/2")
	if want := `resource not found: "app://customers_show/1\n/2": expected`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error with a newline = %q; want it quoted", err.Error())
	}
}

// TestExpand checks the RFC 6570 encoding and the order of the query.
func TestExpand(t *testing.T) {
	cases := []struct {
		tpl  *uriTemplate
		args map[string]string
		want string
	}{
		{tplCustomersShow(), map[string]string{"id": "12"}, "app://customers_show/12"},
		{tplCustomersIndex(), nil, "app://customers_index"},
		{tplCustomersIndex(), map[string]string{"sort": "name", "page": "2", "search": "ada lovelace"},
			"app://customers_index?page=2&search=ada%20lovelace&sort=name"},
		{tplCustomersIndex(), map[string]string{"search": "a/b%c&d=e+f?g#h~i-j.k_l é"},
			"app://customers_index?search=a%2Fb%25c%26d%3De%2Bf%3Fg%23h~i-j.k_l%20%C3%A9"},
		{tplOrdersBetween(), map[string]string{"from": "a/b", "to": "2024", "status": "paid"},
			"app://orders_between/a%2Fb/2024?status=paid"},
		{tplOrdersBetween(), map[string]string{"from": "2024", "to": "2025", "status": ""},
			"app://orders_between/2024/2025?status="},
		// What no URI of the template spells: no URI.
		{tplOrdersBetween(), map[string]string{"from": "a", "to": "b", "bogus": "x"}, ""},
		{tplOrdersBetween(), map[string]string{"from": "a"}, ""},
		{tplOrdersBetween(), map[string]string{"from": "", "to": "b"}, ""},
		{tplOrdersBetween(), map[string]string{"from": "\xff", "to": "b"}, ""},
		{tplOrdersBetween(), map[string]string{"from": "a", "to": "b", "status": "\xc3"}, ""},
	}
	for _, c := range cases {
		got, ok := c.tpl.expand(c.args)
		if ok != (c.want != "") || ok && got != c.want {
			t.Errorf("expand(%q) = %q, %v; want %q", c.args, got, ok, c.want)
		}
	}
	long := strings.Repeat("é", maxURILength/6)
	if uri, ok := tplCustomersShow().expand(map[string]string{"id": long}); ok || len(uri) <= maxURILength {
		t.Errorf("expand of a value that encodes past %d bytes: %d bytes, %v; want it refused", maxURILength, len(uri), ok)
	}
}

// BenchmarkParseConvert measures what a resources/read of a five-variable
// template costs before the command runs.
func BenchmarkParseConvert(b *testing.B) {
	tpl := tplCustomersIndex()
	const uri = "app://customers_index?direction=desc&page=3&per_page=25&search=ada%20lovelace&sort=name"
	b.ReportAllocs()
	for b.Loop() {
		values, err := tpl.parse(uri)
		if err != nil {
			b.Fatal(err)
		}
		if _, verr := tpl.convert(values); verr != nil {
			b.Fatal(verr)
		}
	}
}

// FuzzParseConvert feeds arbitrary URIs to parse and convert of a query
// template (customers_index, five variables) and path templates, and checks
// that neither panics, that they fail only with *uriError or
// *ValidationError, that nothing over maxURILength is accepted, and that
// whatever is accepted re-expands from its canonical values to a URI that
// gives the same canonical JSON.
func FuzzParseConvert(f *testing.F) {
	for _, seed := range []string{
		"app://customers_index",
		"app://customers_index?direction=desc&page=3&per_page=25&search=ada%20lovelace&sort=name",
		"app://customers_index?sort=name&page=03&direction=asc",
		"app://customers_index?search=a+b%2Bc",
		"app://customers_index?search=%C3%A9%F0%9F%98%80%E2%80%A8",
		"app://customers_index?search=%3Cscript%3E%26%22%5C",
		"app://customers_index?page=1&page=1",
		"app://customers_index?bogus=1",
		"app://customers_index?page",
		"app://customers_index?",
		"app://customers_index?page=1&&sort=name",
		"app://customers_index?search=%zz",
		"app://customers_index?search=%4",
		"app://customers_index?search=%FF",
		"app://customers_index?page=-0&per_page=9223372036854775808",
		"app://customers_index#frag",
		"app://customers_index/",
		"app://orders_between/2024-01-01/2024-12-31?status=paid",
		"app://orders_between/a%2Fb/c?status=null",
		"app://orders_between//b",
		"app://orders_between/a/b/",
		"app://kinds/255?tiny=-128&big=18446744073709551615&flag=true&ratio=1.1&score=null&limit=null&level=null&mode=null&note=null",
		"app://kinds/-0?ratio=3.5e38&score=1e400",
		"app://kinds/1?score=-0.0&ratio=1e-7",
		"app://products_search?min=1.50&max=1e21&q=lamp&category=home",
		"app://products_search?min=0x1p3&max=NaN",
		"http://customers_index",
		"app://" + strings.Repeat("a", 2100),
	} {
		f.Add(seed)
	}
	templates := []*uriTemplate{tplCustomersIndex(), tplOrdersBetween(), tplKinds(), tplProductsSearch()}
	f.Fuzz(func(t *testing.T, uri string) {
		for _, tpl := range templates {
			checkParseConvert(t, tpl, uri)
		}
	})
}

// checkParseConvert checks FuzzParseConvert's invariants for one template.
func checkParseConvert(t *testing.T, tpl *uriTemplate, uri string) {
	values, err := tpl.parse(uri)
	if err != nil {
		var ue *uriError
		if !errors.As(err, &ue) {
			t.Fatalf("parse(%q) failed with %T, not *uriError: %v", uri, err, err)
		}
		return
	}
	if len(uri) > maxURILength {
		t.Fatalf("parse accepted a %d-byte URI", len(uri))
	}
	if cmd, ok := splitCommand(tpl.scheme, uri); !ok || cmd != tpl.command {
		t.Fatalf("parse accepted %q but splitCommand says %q, %v", uri, cmd, ok)
	}
	out, verr := tpl.convert(values)
	if verr != nil {
		if len(verr.Errors) == 0 {
			t.Fatalf("convert(%q) failed with no field errors", values)
		}
		return
	}
	assertCanonical(t, out)

	canonical := canonicalValues(t, out)
	again, ok := tpl.expand(canonical)
	values2, err := tpl.parse(again)
	if len(again) > maxURILength {
		// Percent-encoding can make the canonical URI longer than one
		// that spelled its values raw; then it must be refused.
		if err == nil || ok {
			t.Fatalf("parse accepted the %d-byte %q, or expand did (%v)", len(again), again, ok)
		}
		return
	}
	if !ok {
		t.Fatalf("expand refused %q, the canonical values of %q", canonical, uri)
	}
	if err != nil {
		t.Fatalf("parse of re-expanded %q (from %q): %v", again, uri, err)
	}
	if !maps.Equal(values2, canonical) {
		t.Fatalf("parse(%q) = %q; want %q", again, values2, canonical)
	}
	out2, verr := tpl.convert(values2)
	if verr != nil {
		t.Fatalf("convert of re-expanded %q (from %q): %v", again, uri, verr)
	}
	if string(out2) != string(out) {
		t.Fatalf("%q gives %s but its re-expansion %q gives %s", uri, out, again, out2)
	}
}

// canonicalValues turns convert's JSON back into one string per variable:
// numbers in their canonical text, booleans and null by name, and the
// variables of a parent object under their own names.
func canonicalValues(t *testing.T, out []byte) map[string]string {
	dec := json.NewDecoder(strings.NewReader(string(out)))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		t.Fatalf("convert wrote invalid JSON %s: %v", out, err)
	}
	values := map[string]string{}
	var add func(map[string]any)
	add = func(obj map[string]any) {
		for name, v := range obj {
			switch v := v.(type) {
			case map[string]any:
				add(v)
			case json.Number:
				values[name] = string(v)
			case string:
				values[name] = v
			case bool:
				values[name] = map[bool]string{true: "true", false: "false"}[v]
			case nil:
				values[name] = "null"
			default:
				t.Fatalf("convert wrote a %T in %s", v, out)
			}
		}
	}
	add(args)
	return values
}

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

	uri, ok := tpl.expand(texts)
	if !ok {
		t.Fatalf("expand refused %q", texts)
	}
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

	// The canonical arguments spell a URI again (a tools/call's link),
	// which reads back exactly those arguments.
	spelled, ok := tpl.valuesOf(got)
	if !ok {
		t.Fatalf("valuesOf(%s) of %s refused", got, tpl.raw)
	}
	link, ok := tpl.expand(spelled)
	if !ok {
		t.Fatalf("expand(%q) of %s refused", spelled, tpl.raw)
	}
	back, err := tpl.parse(link)
	if err != nil || !maps.Equal(back, spelled) {
		t.Fatalf("parse(%q) = %q, %v; expanded from %q", link, back, err, spelled)
	}
	if again, verr := tpl.convert(back); verr != nil || string(again) != string(got) {
		t.Fatalf("convert(parse(%q)) = %s, %v; want %s", link, again, verr, got)
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
	uri, ok := tpl.expand(args)
	if !ok {
		t.Fatalf("expand refused %q", args)
	}
	got, err := tpl.parse(uri)
	if err != nil {
		t.Fatalf("parse(%q): %v", uri, err)
	}
	if !maps.Equal(got, args) {
		t.Fatalf("parse(expand(%q)) = %q", args, got)
	}
	if again, _ := tpl.expand(got); again != uri {
		t.Fatalf("expand is not stable: %q then %q", uri, again)
	}
}
