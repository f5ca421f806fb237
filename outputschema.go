package adapter

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// outputSchema reflects the schema of a result type R as a tool's
// outputSchema, or says there is none (ok false).
//
// A tool with an outputSchema must answer with structuredContent that
// conforms, and MCP wants an object there. Only a struct (not a pointer to
// one, which may be nil) is sure to encode as an object: a list, a string, a
// map (nil is null) or a type that encodes itself publishes none, and its
// tools answer with text, plus structuredContent when the value happens to
// be an object. So does a struct whose fields invopop and encoding/json
// resolve differently (see checkFields).
//
// invopop describes what Go decodes; the output schema must describe what
// encoding/json writes, and Go writes null for a nil pointer, slice or map.
// Those properties allow null, at every level, so that every value the
// command can return conforms (a client may check it, and mcp-go does with
// server.WithOutputSchemaValidation).
func outputSchema(t reflect.Type) (schema json.RawMessage, ok bool, err error) {
	if value, addr := encodesItself(t); t.Kind() != reflect.Struct || value || addr {
		return nil, false, nil
	}
	if checkWrittenFields(t) != nil {
		// invopop would describe fields encoding/json does not write.
		return nil, false, nil
	}
	s := reflectSchema(t, outputMapper)
	if s.Type != "object" {
		return nil, false, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, false, fmt.Errorf("output schema: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, false, fmt.Errorf("output schema: %w", err)
	}
	allowNilValues(doc, t)
	b, err = json.Marshal(doc)
	if err != nil {
		return nil, false, fmt.Errorf("output schema: %w", err)
	}
	return b, true, nil
}

// allowNilValues walks schema s of Go type t and lets null through wherever
// encoding/json may write it: the properties, items and map values whose Go
// type is a pointer, slice or map. A reference into $defs (a recursive
// type) is followed once, to fix the definition itself.
func allowNilValues(s map[string]any, t reflect.Type) {
	w := nilWalker{defs: map[string]any{}, done: map[string]bool{}}
	if defs, ok := s["$defs"].(map[string]any); ok {
		w.defs = defs
	}
	w.walk(s, t)
}

type nilWalker struct {
	defs map[string]any
	done map[string]bool
}

func (w nilWalker) walk(s map[string]any, t reflect.Type) {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		if def, ok := w.defs[name].(map[string]any); ok && !w.done[name] {
			w.done[name] = true
			w.walk(def, t)
		}
		return
	}
	t = derefType(t)
	if t == jsonNumberType {
		// A string to invopop, but encoding/json writes it as a number.
		s["type"] = "number"
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		props, _ := s["properties"].(map[string]any)
		for _, f := range goFields(t) {
			if prop, ok := props[f.name].(map[string]any); ok {
				w.walk(prop, f.typ)
				props[f.name] = withNull(prop, f.typ)
			}
			if behindPointer(t, f.index) {
				// encoding/json leaves it out when the pointer is nil.
				if req, ok := s["required"].([]any); ok {
					s["required"] = slices.DeleteFunc(req, func(r any) bool { return r == f.name })
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if items, ok := s["items"].(map[string]any); ok {
			w.walk(items, t.Elem())
			s["items"] = withNull(items, t.Elem())
		}
	case reflect.Map:
		if values, ok := s["additionalProperties"].(map[string]any); ok {
			w.walk(values, t.Elem())
			s["additionalProperties"] = withNull(values, t.Elem())
		}
		// An integer key: invopop allows digits only, and encoding/json
		// writes -1 as "-1".
		if pattern, ok := s["patternProperties"].(map[string]any); ok {
			for _, key := range slices.Sorted(maps.Keys(pattern)) {
				values, ok := pattern[key].(map[string]any)
				if !ok {
					continue
				}
				w.walk(values, t.Elem())
				delete(pattern, key)
				if key == "^[0-9]+$" {
					key = "^-?[0-9]+$"
				}
				pattern[key] = withNull(values, t.Elem())
			}
		}
	}
}

// behindPointer reports whether the field of struct t at index is promoted
// through an embedded pointer.
func behindPointer(t reflect.Type, index []int) bool {
	for _, x := range index[:len(index)-1] {
		f := t.Field(x)
		if f.Type.Kind() == reflect.Pointer {
			return true
		}
		t = f.Type
	}
	return false
}

// withNull returns s, the schema of a value of Go type t, extended to allow
// null when encoding/json can write null for such a value.
func withNull(s map[string]any, t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
	default:
		return s
	}
	if len(s) == 0 {
		return s // {} allows null already
	}
	_, enum := s["enum"]
	_, constant := s["const"]
	if enum || constant {
		// Adding null to the type would not get it past these.
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	switch typ := s["type"].(type) {
	case string:
		s["type"] = []any{typ, "null"}
	case []any:
		if !slices.Contains(typ, any("null")) {
			s["type"] = append(typ, "null")
		}
	default:
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	return s
}

// encodesItself reports whether json encodes a value of t (value) or an
// addressable one (addr) with a method of its own.
func encodesItself(t reflect.Type) (value, addr bool) {
	marshaler, texter := reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()
	value = t.Implements(marshaler) || t.Implements(texter)
	if !value && t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		addr = pt.Implements(marshaler) || pt.Implements(texter)
	}
	return value, addr
}
