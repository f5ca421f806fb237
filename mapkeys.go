package adapter

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Two different JSON keys may name one key of a Go map: json reads the
// keys of a map[int]T with strconv.ParseInt, so "1" and "01" are both 1,
// and those of a TextUnmarshaler key type by its method ("::1" and "0::1"
// are one netip.Addr). It keeps the last value without a word, as for a key
// given twice (jsonkeys.go), which the raw scan cannot see: it knows no
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
