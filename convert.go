package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// convert turns the decoded strings parse returned into the command's
// arguments as canonical JSON, the same arguments a tools/call with these
// values would carry, so the command cannot tell a read from a call.
//
// Each string is converted by its variable's kind:
//   - integer: an optional "-" (none for an unsigned field, not even on
//     0) and decimal digits only (no "+", spaces,
//     exponent, fraction or base prefix), within the range of
//     variable.goKind (int64 when reflect.Invalid); for a float field, a
//     number, which the schema then holds to be whole;
//   - number: a decimal number as strconv.ParseFloat reads it, without a
//     leading "+", hex, Inf or NaN, finite in float64 (float32 when goKind is
//     reflect.Float32); as an integer when goKind is an integer kind;
//   - integer or number of a json.Number field (variable.jsonNumber): the
//     same decimal numbers, kept as written but for JSON's grammar (.5 is
//     0.5, 007 is 7), every digit, of any size within maxNumberScale, as a
//     tools/call's json.Number holds the number as its request wrote it;
//   - boolean: exactly "true" or "false";
//   - enum: exactly one of variable.enum;
//   - string: the decoded value as is.
//
// For a nullable integer, number, boolean or enum variable the value "null"
// is JSON null (for an enum only when "null" is not one of its constants). A
// string stays a string: "null" is the four-letter string, since nothing
// else could spell it.
//
// Every failing variable is reported, in template order (path, then query),
// as one FieldError of the returned *ValidationError; a required variable
// missing from values and a key that names no variable are failures too.
// The arguments are still returned then, without the failed variables, so
// that the rest can be checked too (see command.argsFromURI).
//
// The arguments are rebuilt in the command's shape: a variable with a parent
// goes into an object under the parent's name, an absent optional variable
// is left out, and a parent none of whose variables is present is left out.
// The JSON is canonical, byte for byte what json.Marshal gives for the
// equivalent map[string]any (keys sorted, no spaces, numbers in their
// shortest form: page=02 is 2, -0 is 0, 1.50 is 1.5, a float32 in float32's
// shortest form), so equal arguments give equal bytes however the URI spelled
// them: it keys the work shared between identical subscriptions. A
// json.Number keeps its digits: 1.50 and 1.5 are different json.Numbers,
// which the command can tell apart, so they are different arguments.
func (t *uriTemplate) convert(values map[string]string) (json.RawMessage, *ValidationError) {
	// Templates have few variables and short values: both buffers usually
	// stay on the stack, leaving the result the only allocation.
	var fieldsBuf [16]convertedField
	var textBuf [512]byte
	fields, text := fieldsBuf[:0], textBuf[:0]
	var errs []FieldError
	known := 0
	for _, group := range [2][]variable{t.path, t.query} {
		for i := range group {
			v := &group[i]
			s, ok := values[v.name]
			if !ok {
				if v.required {
					errs = append(errs, FieldError{Field: v.name, Message: "is required"})
				}
				continue
			}
			known++
			start := len(text)
			var msg string
			if text, msg = appendValue(text, v, s); msg != "" {
				errs = append(errs, FieldError{Field: v.name, Message: msg})
				text = text[:start]
				continue
			}
			fields = append(fields, convertedField{v: v, start: start, end: len(text)})
		}
	}
	if known < len(values) {
		errs = append(errs, t.unknownVariables(values)...)
	}
	slices.SortFunc(fields, compareFields)
	out := writeObject(fields, text)
	if len(t.requiredParents) > 0 {
		out = t.withRequiredParents(out, fields)
	}
	if len(errs) > 0 {
		return out, &ValidationError{Errors: errs}
	}
	return out, nil
}

// withRequiredParents adds an empty object for each required struct
// argument none of whose variables the URI gave: the struct is required,
// its fields are not, and {} is what a tools/call would send. Rare enough
// to take the slow, obviously canonical way: json.Marshal sorts map keys.
func (t *uriTemplate) withRequiredParents(out json.RawMessage, fields []convertedField) json.RawMessage {
	var obj map[string]json.RawMessage
	missing := false
	for _, p := range t.requiredParents {
		if !slices.ContainsFunc(fields, func(f convertedField) bool { return f.v.parent == p }) {
			if obj == nil {
				_ = json.Unmarshal(out, &obj)
			}
			obj[p] = json.RawMessage("{}")
			missing = true
		}
	}
	if !missing {
		return out
	}
	b, _ := json.Marshal(obj)
	return b
}

// variables lists the template's variables, path then query, each group in
// name order: the order of the URI and of convert's errors.
func (t *uriTemplate) variables() []variable {
	vars := make([]variable, 0, len(t.path)+len(t.query))
	return append(append(vars, t.path...), t.query...)
}

// convertedField is one converted variable: its JSON value is
// text[start:end] of convert's scratch buffer.
type convertedField struct {
	v          *variable
	start, end int
}

// topKey is the property of the top-level object a field lands in: its
// parent's name, or its own for a top-level variable.
func (f convertedField) topKey() string {
	if f.v.parent != "" {
		return f.v.parent
	}
	return f.v.name
}

// compareFields orders fields as the canonical JSON lists them: by
// top-level key, then by name inside a parent object. Sorting whole groups
// together keeps each parent's fields adjacent.
func compareFields(a, b convertedField) int {
	if c := strings.Compare(a.topKey(), b.topKey()); c != 0 {
		return c
	}
	return strings.Compare(a.v.name, b.v.name)
}

// writeObject writes the sorted fields as one JSON object, nesting each
// parent's fields in an object of their own, into a buffer allocated once.
func writeObject(fields []convertedField, text []byte) json.RawMessage {
	size := 2 + len(text)
	for _, f := range fields {
		size += len(f.v.name) + 4 + len(f.v.parent) + 6
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, f := range fields {
		parent := f.v.parent
		opens := parent != "" && (i == 0 || fields[i-1].v.parent != parent)
		if i > 0 {
			out = append(out, ',')
		}
		if opens {
			out = appendJSONString(out, parent)
			out = append(out, ':', '{')
		}
		out = appendJSONString(out, f.v.name)
		out = append(out, ':')
		out = append(out, text[f.start:f.end]...)
		if parent != "" && (i == len(fields)-1 || fields[i+1].v.parent != parent) {
			out = append(out, '}')
		}
	}
	return append(out, '}')
}

// unknownVariables reports the keys of values that name no variable, in
// sorted order so that errors come out the same on every run.
func (t *uriTemplate) unknownVariables(values map[string]string) []FieldError {
	var names []string
	for name := range values {
		if !slices.ContainsFunc(t.path, func(v variable) bool { return v.name == name }) &&
			t.queryVariable(name) == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	errs := make([]FieldError, len(names))
	for i, name := range names {
		errs[i] = FieldError{Field: name, Message: "is not a variable of " + t.raw}
	}
	return errs
}

// appendValue appends the JSON value of s converted by v's kind to dst, or
// returns a message saying why s is not such a value.
func appendValue(dst []byte, v *variable, s string) ([]byte, string) {
	orNull := ""
	if v.nullable && v.kind != kindString && !(v.kind == kindEnum && slices.Contains(v.enum, "null")) {
		if s == "null" {
			return append(dst, "null"...), ""
		}
		orNull = " or null"
	}
	if v.jsonNumber && (v.kind == kindInteger || v.kind == kindNumber) {
		// Through no float: the schema then holds the number as written,
		// and refuses 2.5 for an integer.
		return appendJSONNumber(dst, s, orNull)
	}
	switch v.kind {
	case kindInteger:
		if v.goKind == reflect.Float32 || v.goKind == reflect.Float64 {
			// An integer schema on a float field: 2.0 and 1e3 are JSON
			// Schema integers that Go takes, from a tools/call too; the
			// schema then refuses 2.5.
			return appendNumber(dst, v.goKind, s, orNull)
		}
		return appendInteger(dst, v.goKind, s, orNull)
	case kindNumber:
		if integerKind(v.goKind) {
			// A number schema on an integer field (a type tag, a
			// JSONSchema method): Go takes integer literals only, every
			// digit kept, as it does from a tools/call.
			return appendInteger(dst, v.goKind, s, orNull)
		}
		return appendNumber(dst, v.goKind, s, orNull)
	case kindBoolean:
		if s == "true" || s == "false" {
			return append(dst, s...), ""
		}
		return dst, "must be true or false" + orNull
	case kindEnum:
		if slices.Contains(v.enum, s) {
			return appendJSONString(dst, s), ""
		}
		return dst, enumMessage(v.enum) + orNull
	default:
		return appendJSONString(dst, s), ""
	}
}

// appendInteger appends the canonical decimal text of the integer s (no
// leading zeros, no "-0"), bounded by the Go kind of its field. Digits are
// copied exactly, never through a float64, so 9007199254740993 stays itself.
func appendInteger(dst []byte, kind reflect.Kind, s, orNull string) ([]byte, string) {
	digits, neg := strings.CutPrefix(s, "-")
	if digits == "" {
		return dst, "must be an integer" + orNull
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return dst, "must be an integer" + orNull
		}
	}
	if numberOutOfScale(s) {
		// As a tools/call's is told, before the schema and Go's range.
		return dst, outOfScaleMessage
	}
	bits, signed := intRange(kind)
	// ParseUint accepts any run of digits; its only failure is overflow.
	mag, err := strconv.ParseUint(digits, 10, 64)
	// An unsigned field takes no sign, not even on 0: encoding/json
	// refuses -0 for it, and a read must answer as a tools/call does.
	inRange := err == nil && !(neg && !signed)
	if inRange && mag != 0 {
		switch {
		case signed && neg:
			inRange = mag <= 1<<(bits-1)
		case signed:
			inRange = mag <= 1<<(bits-1)-1
		default:
			inRange = mag <= math.MaxUint64>>(64-bits)
		}
	}
	if !inRange {
		return dst, intRangeMessage(kind)
	}
	if neg && mag != 0 {
		dst = append(dst, '-')
	}
	return strconv.AppendUint(dst, mag, 10), ""
}

// integerKind reports a Go integer kind.
func integerKind(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// intRange is the width and signedness of an integer field of Go kind k;
// int64 when the kind is unknown or not an integer kind.
func intRange(k reflect.Kind) (bits uint, signed bool) {
	switch k {
	case reflect.Int8:
		return 8, true
	case reflect.Int16:
		return 16, true
	case reflect.Int32:
		return 32, true
	case reflect.Int:
		return strconv.IntSize, true
	case reflect.Uint8:
		return 8, false
	case reflect.Uint16:
		return 16, false
	case reflect.Uint32:
		return 32, false
	case reflect.Uint, reflect.Uintptr:
		return strconv.IntSize, false
	case reflect.Uint64:
		return 64, false
	default:
		return 64, true
	}
}

// appendNumber appends the canonical JSON text of the finite decimal number
// s, in float32 precision for a float32 field. -0 becomes 0, since the two
// are equal arguments and must give equal bytes.
func appendNumber(dst []byte, kind reflect.Kind, s, orNull string) ([]byte, string) {
	bits := 64
	if kind == reflect.Float32 {
		bits = 32
	}
	if !isDecimal(s) {
		return dst, "must be a number" + orNull
	}
	f, err := strconv.ParseFloat(s, bits)
	if errors.Is(err, strconv.ErrSyntax) {
		// Before the scale, which reads what follows an "e" as an
		// exponent: 1e5e5 is no number.
		return dst, "must be a number" + orNull
	}
	if numberOutOfScale(s) {
		return dst, outOfScaleMessage
	}
	if err != nil {
		// A syntax error, or ErrRange with f = ±Inf: underflow to zero
		// is no error.
		if math.IsInf(f, 0) {
			return dst, floatRangeMessage(kind)
		}
		return dst, "must be a number" + orNull
	}
	if f == 0 {
		f = 0
	}
	return appendFloat(dst, f, bits), ""
}

// appendJSONNumber appends s, a decimal number, for a json.Number field:
// the digits as written, in JSON's grammar (jsonDecimal), with no range but
// the scale every number has.
func appendJSONNumber(dst []byte, s, orNull string) ([]byte, string) {
	if !isDecimal(s) {
		return dst, "must be a number" + orNull
	}
	if _, err := strconv.ParseFloat(s, 64); errors.Is(err, strconv.ErrSyntax) {
		// Only the syntax: a json.Number holds 1e400, which overflows.
		return dst, "must be a number" + orNull
	}
	if numberOutOfScale(s) {
		return dst, outOfScaleMessage
	}
	return append(dst, jsonDecimal(s)...), ""
}

// isDecimal reports whether s is made only of the characters of a decimal
// number and does not start with "+", which keeps hex floats, Inf, NaN,
// underscores and spaces away from strconv.ParseFloat.
func isDecimal(s string) bool {
	if s == "" || s[0] == '+' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		default:
			return false
		}
	}
	return true
}

// appendFloat appends f as encoding/json writes a float of that many bits:
// the shortest text that reads back as f, in plain notation for magnitudes
// in [1e-6, 1e21) and in exponent notation, without a leading zero in a
// negative exponent, outside it.
func appendFloat(dst []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	plain := abs == 0 || (abs >= 1e-6 && abs < 1e21)
	if bits == 32 {
		// The bounds are compared in float32, as float32 rounds them.
		a := float32(abs)
		plain = a == 0 || (a >= 1e-6 && a < 1e21)
	}
	if plain {
		return strconv.AppendFloat(dst, f, 'f', -1, bits)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, bits)
	// 1e-07 becomes 1e-7; positive exponents here have two digits already.
	exp := start + bytes.LastIndexByte(dst[start:], 'e')
	if dst[exp+1] == '-' && dst[exp+2] == '0' && len(dst) == exp+4 {
		dst[exp+2] = dst[exp+3]
		dst = dst[:exp+3]
	}
	return dst
}

// appendJSONString appends s as a JSON string escaped exactly as
// encoding/json escapes it by default: quote, backslash and control
// characters, the HTML-sensitive "<", ">", "&", and U+2028/U+2029; invalid
// UTF-8 becomes U+FFFD. Matching encoding/json keeps the output canonical.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
