package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Numbers Go rounds.
//
// The schema reads a number as written, exactly; Go decodes it into the
// nearest float its field holds. The two can disagree at a bound:
// 0.99999999999999999 passes exclusiveMaximum 1 and decodes to 1, and
// 1.00000000000000001 fails maximum 1 though it decodes to 1. A command
// must never run with a value its schema forbids, and a read and a
// tools/call with the same value must get the same answer. So a number is
// held to the schema both as written and as Go decoded it: a tools/call's
// as written first, then, when Go may have rounded it, as decoded
// (recheck); a read's as converted, which is rounded, then, when rounding
// changed it, as written (checkWrittenNumbers).

// maxNumberScale bounds the digits of a number and its exponent, on every
// way in: a number with more digits, or a larger exponent, is refused
// before the schema sees it. The schema's validator holds a number as an
// exact fraction (math/big): 1e-999999 takes it 50 ms, one whose exponent
// math/big refuses panics it, and no Go number needs a thousand digits or
// comes near 1e±1000 (float64 ends before 1e309).
const maxNumberScale = 1000

// outOfScaleMessage says why a number was refused by maxNumberScale.
var outOfScaleMessage = fmt.Sprintf("must be a number of at most %d digits, with an exponent between -%[1]d and %[1]d", maxNumberScale)

// numberOutOfScale reports whether s, a JSON number or a decimal a read
// gave, has more than maxNumberScale digits or an exponent beyond
// ±maxNumberScale.
func numberOutOfScale(s string) bool {
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	if exp != "" {
		e, err := strconv.Atoi(exp)
		if err != nil || e < -maxNumberScale || e > maxNumberScale {
			return true
		}
	}
	digits := len(mant)
	if strings.HasPrefix(mant, "-") {
		digits--
	}
	if strings.Contains(mant, ".") {
		digits--
	}
	return digits > maxNumberScale
}

// outOfScaleIssues replaces each number of v, arguments as the schema
// reads them, that is out of scale (numberOutOfScale) with 0, which the
// validator takes at no cost, and reports it at its place. It returns v.
func outOfScaleIssues(v any, path []string, out *[]issue) any {
	switch v := v.(type) {
	case json.Number:
		if numberOutOfScale(string(v)) {
			*out = append(*out, issue{path: slices.Clone(path), msg: outOfScaleMessage, rank: rankDecode})
			return json.Number("0")
		}
	case map[string]any:
		for k, e := range v {
			v[k] = outOfScaleIssues(e, append(path, k), out)
		}
	case []any:
		for i, e := range v {
			v[i] = outOfScaleIssues(e, append(path, strconv.Itoa(i)), out)
		}
	}
	return v
}

// checkWrittenNumbers holds a read's number values to the schema as the
// URI wrote them, where converting rounded them: raw, the converted
// arguments, carries them rounded, as Go would decode a tools/call's. Nil
// when every number converted exactly, or the written ones pass. The
// report of those that fail decodes them, running the arguments type's
// UnmarshalJSON: its panic fails the read alone, as check's does.
func (c *command) checkWrittenNumbers(values map[string]string, raw json.RawMessage) (err error) {
	defer recoverUserPanic(c.logger, c.name, "checking the arguments", &err)
	var written map[string]any
	for _, group := range [2][]variable{c.tmpl.path, c.tmpl.query} {
		for i := range group {
			v := &group[i]
			s, ok := values[v.name]
			// A number variable, or an integer one of a float field, which
			// converts as a number too (appendValue): both may round. A
			// json.Number's converts as written, and never does.
			asNumber := v.kind == kindNumber || v.kind == kindInteger && (v.goKind == reflect.Float32 || v.goKind == reflect.Float64)
			if !ok || !asNumber || v.jsonNumber || !hasInexactNumber(json.Number(s)) || convertsExactly(s, v.goKind) {
				continue
			}
			if written == nil {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
				if written, _ = inst.(map[string]any); err != nil || written == nil {
					return nil // convert wrote it: cannot happen
				}
			}
			place := written
			if v.parent != "" {
				if place, _ = written[v.parent].(map[string]any); place == nil {
					continue
				}
			}
			place[v.name] = json.Number(jsonDecimal(s))
		}
	}
	if written == nil {
		return nil
	}
	if verr := c.inputSchema.Validate(written); verr != nil {
		return c.report(written, schemaIssues(verr))
	}
	return nil
}

// convertsExactly reports whether s, a decimal number convert accepted,
// is exactly the float of Go kind k it converts to.
func convertsExactly(s string, k reflect.Kind) bool {
	bits := 64
	if k == reflect.Float32 {
		bits = 32
	}
	f, err := strconv.ParseFloat(s, bits)
	exact, ok := new(big.Rat).SetString(s)
	if err != nil || !ok || math.IsInf(f, 0) {
		return true // not a number convert accepted: nothing to say
	}
	return new(big.Rat).SetFloat64(f).Cmp(exact) == 0
}

// jsonDecimal writes s, a decimal number strconv.ParseFloat reads, in
// JSON's grammar with the same value: ".5" is 0.5, "1." is 1, "007" is 7.
func jsonDecimal(s string) string {
	sign := ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", rest
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i:]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole = strings.TrimLeft(whole, "0"); whole == "" {
		whole = "0"
	}
	if frac != "" {
		frac = "." + frac
	}
	return sign + whole + frac + exp
}

// recheck holds the arguments to the schema again, each number that Go
// may have rounded (hasInexactNumber) as Go decoded it. The schema checked
// the numbers as written, and Go rounds a number with a fraction, an
// exponent or many digits to the nearest float it can hold:
// 0.99999999999999999 passes exclusiveMaximum 1, then decodes to 1. The
// command must never run with a value its schema forbids. Only the numbers
// given are replaced: fields left out stay out, as their zero values might
// not pass. It returns the arguments with those numbers, and what the
// schema says of them; no issues when they pass.
func (c *command) recheck(inst any, ptr reflect.Value) (map[string]any, []issue) {
	again, err := json.Marshal(ptr.Interface())
	if err != nil {
		return nil, nil // what json cannot write, the schema never saw either
	}
	decoded, err := jsonschema.UnmarshalJSON(bytes.NewReader(again))
	if err != nil {
		return nil, nil
	}
	rounded := withDecodedNumbers(inst, decoded)
	obj, _ := rounded.(map[string]any)
	if obj == nil {
		return nil, nil
	}
	if err := c.inputSchema.Validate(rounded); err != nil {
		return obj, schemaIssues(err)
	}
	return nil, nil
}

// withDecodedNumbers returns given, a JSON value as the request wrote it,
// with each number Go may have rounded replaced by the number at the same
// place in decoded, the value as Go decoded and wrote it again.
func withDecodedNumbers(given, decoded any) any {
	switch g := given.(type) {
	case json.Number:
		if d, ok := decoded.(json.Number); ok && hasInexactNumber(g) {
			return d
		}
	case map[string]any:
		d, ok := decoded.(map[string]any)
		if !ok {
			return given
		}
		out := make(map[string]any, len(g))
		for k, v := range g {
			if dv, ok := d[k]; ok {
				v = withDecodedNumbers(v, dv)
			} else {
				// Go wrote no value (omitempty, omitzero): it decoded a
				// zero, 1e-400 as 0.
				v = withZeroNumbers(v)
			}
			out[k] = v
		}
		return out
	case []any:
		d, ok := decoded.([]any)
		if !ok || len(d) != len(g) {
			return given
		}
		out := make([]any, len(g))
		for i := range g {
			out[i] = withDecodedNumbers(g[i], d[i])
		}
		return out
	}
	return given
}

// withZeroNumbers returns given, a JSON value that Go decoded into a zero
// value and so left out when it wrote the arguments again, with each
// number Go may have rounded replaced by 0.
func withZeroNumbers(given any) any {
	switch g := given.(type) {
	case json.Number:
		if hasInexactNumber(g) {
			return json.Number("0")
		}
	case map[string]any:
		out := make(map[string]any, len(g))
		for k, v := range g {
			out[k] = withZeroNumbers(v)
		}
		return out
	case []any:
		out := make([]any, len(g))
		for i, v := range g {
			out[i] = withZeroNumbers(v)
		}
		return out
	}
	return given
}

// hasInexactNumber reports whether v, arguments as the schema reads them,
// holds a number Go may round when it decodes it into a float: one with a
// fraction or an exponent, or more digits than a float32 holds exactly
// (every integer of 7 digits; 16777217 is not a float32).
func hasInexactNumber(v any) bool { return hasNumberBeyond(v, float32Digits) }

// Integers of up to this many digits a float32 (float64) holds exactly.
const (
	float32Digits = 7
	float64Digits = 15
)

// hasNumberBeyond is hasInexactNumber for floats that hold every integer of
// up to exact digits: a command without a float32 argument rechecks no
// integer of 8 to 15 digits, an ID say, on every call.
func hasNumberBeyond(v any, exact int) bool {
	switch v := v.(type) {
	case json.Number:
		digits := 0
		for _, r := range v {
			switch {
			case r == '.' || r == 'e' || r == 'E':
				return true
			case r >= '0' && r <= '9':
				digits++
			}
		}
		return digits > exact
	case map[string]any:
		for _, e := range v {
			if hasNumberBeyond(e, exact) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasNumberBeyond(e, exact) {
				return true
			}
		}
	}
	return false
}

// exactDigits is how many digits an integer may have that every float
// argument of t holds exactly: float32Digits when t holds a float32
// anywhere, else float64Digits.
func exactDigits(t reflect.Type) int {
	if holdsFloat32(t, map[reflect.Type]bool{}) {
		return float32Digits
	}
	return float64Digits
}

func holdsFloat32(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Float32:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsFloat32(t.Elem(), seen)
	case reflect.Map:
		return holdsFloat32(t.Key(), seen) || holdsFloat32(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsFloat32(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
