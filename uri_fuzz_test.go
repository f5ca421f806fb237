package adapter

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
)

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
	again := tpl.expand(canonical)
	values2, err := tpl.parse(again)
	if len(again) > maxURILength {
		// Percent-encoding can make the canonical URI longer than one
		// that spelled its values raw; then it must be refused.
		if err == nil {
			t.Fatalf("parse accepted the %d-byte %q", len(again), again)
		}
		return
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
