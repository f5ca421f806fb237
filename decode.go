package adapter

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// decodeStrict decodes raw into dst as encoding/json does, refusing unknown
// fields and trailing data.
func decodeStrict(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// decodeIssues finds the places of v, at path, that Go cannot decode into
// type t, skipping the places already settled (whose value is known to be
// of the wrong type). It looks into the properties of plain structs, the
// items of lists and the values of maps, so that each failure is named where
// it is, not at the value that holds it.
func (c *command) decodeIssues(path []string, t reflect.Type, v any, settled map[string]bool, out *[]issue) {
	if settled[pathKey(path)] {
		return
	}
	switch vv := v.(type) {
	case map[string]any:
		if isPlainStruct(t) {
			fields := map[string]goField{}
			for _, f := range goFields(derefType(t)) {
				fields[f.name] = f
			}
			for _, name := range slices.Sorted(maps.Keys(vv)) {
				at := append(slices.Clip(path), name)
				f, ok := fields[name]
				switch {
				case settled[pathKey(at)]:
				case !ok:
					*out = append(*out, issue{path: at, msg: "is not an argument of this command", rank: rankDecode})
				case f.quoted:
					c.quotedIssue(at, f, vv[name], out)
				default:
					c.decodeIssues(at, f.typ, vv[name], settled, out)
				}
			}
			return
		}
		if mt := derefType(t); mt.Kind() == reflect.Map && plainKey(mt.Key()) && !isTextLike(mt) {
			for _, key := range slices.Sorted(maps.Keys(vv)) {
				at := append(slices.Clip(path), key)
				if msg := keyMessage(mt.Key(), key); msg != "" {
					*out = append(*out, issue{path: at, msg: msg, rank: rankDecode})
					continue
				}
				c.decodeIssues(at, mt.Elem(), vv[key], settled, out)
			}
			return
		}
	case []any:
		if et := derefType(t); (et.Kind() == reflect.Slice || et.Kind() == reflect.Array) && !isTextLike(et) {
			for i, item := range vv {
				c.decodeIssues(append(slices.Clip(path), strconv.Itoa(i)), et.Elem(), item, settled, out)
			}
			return
		}
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = decodeStrict(b, reflect.New(t).Interface())
	}
	if err != nil {
		*out = append(*out, issue{path: path, msg: c.goMessage(path, t, v, err), rank: rankDecode})
	}
}

// quotedIssue decodes v, the value of field f with the ",string" option,
// as encoding/json does in f's place: as a JSON string holding the number
// or boolean, which decoding into f's type alone would refuse.
func (c *command) quotedIssue(path []string, f goField, v any, out *[]issue) {
	holder := reflect.StructOf([]reflect.StructField{{Name: "F", Type: f.typ, Tag: `json:"f,string"`}})
	b, err := json.Marshal(map[string]any{"f": v})
	if err == nil {
		err = decodeStrict(b, reflect.New(holder).Interface())
	}
	if err != nil {
		kind := derefType(f.typ).Kind()
		phrase := "a number"
		switch {
		case kind == reflect.Bool:
			phrase = "true or false"
		case derefType(f.typ) == jsonNumberType: // any number, kept as written
		case kind != reflect.Float32 && kind != reflect.Float64:
			phrase = "an integer"
		}
		*out = append(*out, issue{path: path, msg: "must be " + phrase + " written as a string", rank: rankDecode})
	}
}

// goMessage says why Go could not decode v into type t, in the words a
// read's conversion uses for the same value.
func (c *command) goMessage(path []string, t reflect.Type, v any, err error) string {
	orNull := ""
	if len(path) <= 2 && c.nullable[strings.Join(path, "/")] {
		orNull = " or null"
	}
	t = derefType(t)
	p := reflect.PointerTo(t)
	if p.Implements(jsonUnmarshalerType) || p.Implements(textUnmarshalerType) {
		// time.Time, say: its parser's words are about Go, not the value.
		return "must be a valid " + t.String() + orNull
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "has a property that is not allowed: " + name
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		// []byte: a string of base64, as its schema says.
		if _, isString := v.(string); isString {
			return "must be base64 text"
		}
		return "must be a string" + orNull
	}
	if t == jsonNumberType {
		// Published as a number, whose schema refuses a string first;
		// Go is left to refuse one only where a schema of the field's own
		// (oneof_type=number;string) lets strings through, and then it
		// wants a number, in a string or not.
		return "must be a number" + orNull
	}
	num, isNumber := v.(json.Number)
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if isNumber && isIntegerLiteral(string(num)) {
			return intRangeMessage(t.Kind())
		}
		return "must be an integer" + orNull
	case reflect.Float32, reflect.Float64:
		if isNumber {
			return floatRangeMessage(t.Kind())
		}
		return "must be a number" + orNull
	case reflect.Bool:
		return "must be true or false" + orNull
	case reflect.String:
		return "must be a string" + orNull
	case reflect.Slice, reflect.Array:
		return "must be a list" + orNull
	case reflect.Map, reflect.Struct:
		return "must be an object" + orNull
	}
	return "must be a value of type " + t.String()
}

// plainKey reports a map key type that encoding/json reads from the
// object's key itself: a string or an integer, not a TextUnmarshaler.
func plainKey(k reflect.Type) bool {
	if reflect.PointerTo(k).Implements(textUnmarshalerType) {
		return false
	}
	switch k.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// keyMessage says why encoding/json refuses key for a map whose keys are
// of type k (an integer out of k's range, or no integer), "" when it
// takes it.
func keyMessage(k reflect.Type, key string) string {
	if k.Kind() == reflect.String {
		return ""
	}
	m := reflect.New(reflect.MapOf(k, reflect.TypeFor[struct{}]()))
	b, _ := json.Marshal(map[string]struct{}{key: {}})
	if json.Unmarshal(b, m.Interface()) == nil {
		return ""
	}
	if isIntegerLiteral(key) {
		return intRangeMessage(k.Kind())
	}
	return "must be an integer"
}

// isIntegerLiteral reports an optional "-" and decimal digits: a number Go
// refuses for an integer field only because it is out of range.
func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isPlainStruct reports a struct (or pointer to one) that encoding/json
// decodes field by field, not through a method of its own.
func isPlainStruct(t reflect.Type) bool {
	t = derefType(t)
	p := reflect.PointerTo(t)
	return t.Kind() == reflect.Struct && !p.Implements(jsonUnmarshalerType) && !p.Implements(textUnmarshalerType)
}

// isTextLike reports a list or map type that encoding/json does not decode
// item by item: []byte (base64 text) or one that decodes itself.
func isTextLike(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 ||
		p.Implements(jsonUnmarshalerType) || p.Implements(textUnmarshalerType)
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// duplicateKeyError is the refusal of arguments that repeat a key: on the
// argument itself at the top, else on the argument the object is in,
// with the path inside it. Keys come from the client and may be long:
// each is shortened, as the edges cannot rewrite an answer of any length.
func duplicateKeyError(at []string, key string) *ValidationError {
	const rule = "; a JSON object's keys must differ"
	if len(at) == 0 {
		return &ValidationError{Errors: []FieldError{{Field: shortKey(key), Message: "is given twice" + rule}}}
	}
	var msg strings.Builder
	if len(at) > 1 {
		msg.WriteString("item " + itemPath(at[1:]) + " ")
	}
	msg.WriteString("has the key " + quoteName(key) + " twice" + rule)
	return &ValidationError{Errors: []FieldError{{Field: shortKey(at[0]), Message: msg.String()}}}
}

// maxPathSteps is how many steps of a path inside an argument an error
// names: json nests 10,000 deep, and every step is the client's.
const maxPathSteps = 6

// itemPath is steps joined by "/", each shortened, and only the first and
// last maxPathSteps/2 of them, around "…", when there are more: a message
// of any length could not be rewritten by the edges either.
func itemPath(steps []string) string {
	var b strings.Builder
	for i, step := range steps {
		if len(steps) > maxPathSteps && i == maxPathSteps/2 {
			b.WriteString("/…")
		}
		if len(steps) > maxPathSteps && i >= maxPathSteps/2 && i < len(steps)-maxPathSteps/2 {
			continue
		}
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(shortKey(step))
	}
	return b.String()
}

// shortKey is k, cut to its first 64 bytes and "…" when longer.
func shortKey(k string) string {
	if cut, ok := cutName(k); ok {
		return cut + "…"
	}
	return k
}

// Two different JSON keys may name one key of a Go map: json reads the
// keys of a map[int]T with strconv.ParseInt, so "1" and "01" are both 1,
// and those of a TextUnmarshaler key type by its method ("::1" and "0::1"
// are one netip.Addr). It keeps the last value without a word, as for a key
// given twice (internal/jsonkeys), which the raw scan cannot see: it knows no
// types. So arguments whose type has such a map are refused when one of
// its objects holds two keys that decode to one.

// hasDecodedKeys reports whether t reaches a map whose keys json decodes
// rather than takes as written: the commands whose arguments need the
// check, decided once.
func hasDecodedKeys(t reflect.Type, seen map[reflect.Type]bool) bool {
	t = derefType(t)
	if seen[t] || isTextLike(t) {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Struct:
		if !isPlainStruct(t) {
			return false
		}
		for _, f := range goFields(t) {
			if hasDecodedKeys(f.typ, seen) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		return hasDecodedKeys(t.Elem(), seen)
	case reflect.Map:
		return decodedKey(t.Key()) || hasDecodedKeys(t.Elem(), seen)
	}
	return false
}

// decodedKey reports a map key type whose keys json decodes.
func decodedKey(k reflect.Type) bool {
	return k.Kind() != reflect.String || reflect.PointerTo(k).Implements(textUnmarshalerType)
}

// collapsedKey finds in inst, JSON arguments of type t decoded as any, an
// object that is a map with two keys json decodes to one Go key: the path
// to it, and the two keys in order.
func collapsedKey(t reflect.Type, inst any, path []string) (at []string, first, second string, found bool) {
	t = derefType(t)
	switch v := inst.(type) {
	case map[string]any:
		if isPlainStruct(t) {
			for _, f := range goFields(t) {
				if fv, ok := v[f.name]; ok {
					if at, first, second, found = collapsedKey(f.typ, fv, append(slices.Clip(path), f.name)); found {
						return
					}
				}
			}
			return nil, "", "", false
		}
		if t.Kind() != reflect.Map || isTextLike(t) {
			return nil, "", "", false
		}
		var seen map[any]string
		if decodedKey(t.Key()) {
			seen = make(map[any]string, len(v))
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if seen != nil {
				if gk, ok := goMapKey(t.Key(), k); ok {
					if other, twice := seen[gk]; twice {
						return path, other, k, true
					}
					seen[gk] = k
				}
			}
			if at, first, second, found = collapsedKey(t.Elem(), v[k], append(slices.Clip(path), k)); found {
				return
			}
		}
	case []any:
		if (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && !isTextLike(t) {
			for i, item := range v {
				if at, first, second, found = collapsedKey(t.Elem(), item, append(slices.Clip(path), strconv.Itoa(i))); found {
					return
				}
			}
		}
	}
	return nil, "", "", false
}

// goMapKey is the Go key json makes of key for a map with keys of type k,
// by json itself so that its rules are not restated; false when json
// refuses it (the decoding has said so already).
func goMapKey(k reflect.Type, key string) (any, bool) {
	m := reflect.New(reflect.MapOf(k, reflect.TypeFor[struct{}]()))
	b, err := json.Marshal(map[string]struct{}{key: {}})
	if err != nil || json.Unmarshal(b, m.Interface()) != nil {
		return nil, false
	}
	iter := m.Elem().MapRange()
	if !iter.Next() {
		return nil, false
	}
	return iter.Key().Interface(), true
}

// collapsedKeyError refuses arguments whose object at (the argument,
// then the path inside it) holds first and second, one key to Go.
func collapsedKeyError(at []string, first, second string) *ValidationError {
	var msg strings.Builder
	if len(at) > 1 {
		msg.WriteString("item " + itemPath(at[1:]) + " ")
	}
	msg.WriteString("has the keys " + quoteName(first) + " and " + quoteName(second) +
		", which are one key of its Go map; a JSON object's keys must differ")
	return &ValidationError{Errors: []FieldError{{Field: shortKey(at[0]), Message: msg.String()}}}
}
