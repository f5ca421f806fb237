package adapter

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// reflectSchema reflects t with invopop/jsonschema the way the adapter
// publishes schemas: a top-level object with every type spelled out in
// place, so that a client needs no reference resolution. A recursive type
// cannot be spelled out (invopop would never finish), so it alone is
// reflected with references into $defs. mapper is inputMapper or
// outputMapper: the types that code themselves are read and written
// differently.
func reflectSchema(t reflect.Type, mapper func(reflect.Type) *jsonschema.Schema) *jsonschema.Schema {
	var s *jsonschema.Schema
	if !isRecursive(t) {
		r := jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true, Mapper: mapper}
		s = r.ReflectFromType(t)
	} else {
		// invopop then answers {"$ref": "#/$defs/T", "$defs": {...}}. The
		// top level must be the object itself, and T's own references to
		// itself must still resolve: T's definition, with the $defs beside.
		s = (&jsonschema.Reflector{Mapper: mapper}).ReflectFromType(t)
		if def, ok := s.Definitions[strings.TrimPrefix(s.Ref, "#/$defs/")]; ok {
			top := *def
			top.Definitions = s.Definitions
			s = &top
		}
	}
	// A tool's schema is a document of its own; the draft and id that
	// invopop adds name the Go package, which is none of the agent's concern.
	s.Version, s.ID = "", ""
	return s
}

// inputMapper is the input schema of a type that encoding/json reads
// through a method of its own, which invopop would reflect by its Go kind:
// netip.Addr as an object of no properties, a [16]byte UUID as a list of 16
// integers, each a value Go refuses for it. Text is a JSON string, whatever
// the kind; a struct that decodes itself as JSON and has no fields to
// describe (big.Int) may be anything. One with fields of its own keeps
// them: it decodes itself to fill in defaults, say, from the same fields.
// json.Number is a string by its kind, but encoding/json reads a JSON
// number into it, every digit kept, and refuses a JSON string: a number,
// whose jsonschema bounds invopop then applies (the validator compares
// numbers exactly, so a bound on money holds to the last digit).
// Nil leaves t to invopop: a type of its own JSONSchema, time.Time and
// net.IP (whose formats invopop knows), and every other type.
func inputMapper(t reflect.Type) *jsonschema.Schema {
	if ownSchema(t) {
		return nil
	}
	if t == jsonNumberType {
		return &jsonschema.Schema{Type: "number"}
	}
	p := reflect.PointerTo(t) // encoding/json decodes into addressable values
	switch {
	case p.Implements(jsonUnmarshalerType):
		if t.Kind() == reflect.Struct && len(goFields(t)) == 0 {
			return &jsonschema.Schema{}
		}
	case p.Implements(textUnmarshalerType) && t.Kind() != reflect.String:
		return &jsonschema.Schema{Type: "string"}
	}
	return nil
}

// outputMapper is inputMapper for what encoding/json writes. A result is
// written from a value, whose fields are not addressable: a method on the
// pointer is used in some places (a list's items) and not in others, and
// the value may then be anything. A type whose MarshalJSON writes it may
// be anything too, whatever its kind or fields: nothing says what the
// method writes (a money struct as "12.50 EUR", an integer as its name),
// and an argument's reason to keep its fields, defaults read from them,
// is no reason to think they are written.
func outputMapper(t reflect.Type) *jsonschema.Schema {
	if ownSchema(t) {
		return nil
	}
	switch {
	case t.Implements(jsonMarshalerType), reflect.PointerTo(t).Implements(jsonMarshalerType):
		return &jsonschema.Schema{}
	case t.Implements(textMarshalerType) && t.Kind() != reflect.String:
		return &jsonschema.Schema{Type: "string"}
	case reflect.PointerTo(t).Implements(textMarshalerType) && t.Kind() != reflect.String:
		return &jsonschema.Schema{}
	}
	return nil
}

// ownSchema reports a type whose schema invopop knows better than its
// methods say: its own JSONSchema method, or a format of invopop's.
func ownSchema(t reflect.Type) bool {
	return t.Implements(customSchemaType) || t == timeType || t == ipType
}

var ipType = reflect.TypeFor[net.IP]()

// publishedSchema reflects the input schema of an arguments type, as
// tools/list will publish it.
//
// invopop marks every field without omitempty required, pointers included.
// A pointer is Go's optional value, so pointer fields are taken out of the
// required lists, at every level: a nil pointer is what an absent argument
// decodes to. A field tagged jsonschema:"required" stays required.
func publishedSchema(t reflect.Type) (json.RawMessage, error) {
	s := reflectSchema(t, inputMapper)
	if s.Properties == nil || s.Properties.Len() == 0 {
		// An empty struct still takes an object; say so explicitly so that
		// clients render a form with no fields rather than "anything".
		s.Type = "object"
	}
	optionalPointers(s, t)
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return b, nil
}

// optionalPointers removes the pointer fields of struct type t from the
// required list of s, its schema, and does the same wherever a struct of
// t's is spelled out below: in properties, list items, map values, the
// alternatives of a nullable field, and the $defs of a recursive type.
func optionalPointers(s *jsonschema.Schema, t reflect.Type) {
	w := pointerWalker{defs: s.Definitions, done: map[string]bool{}}
	w.walk(s, t)
}

type pointerWalker struct {
	defs jsonschema.Definitions
	done map[string]bool
}

func (w pointerWalker) walk(s *jsonschema.Schema, t reflect.Type) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		// A recursive type: fix the definition itself, once.
		name := strings.TrimPrefix(s.Ref, "#/$defs/")
		if def, ok := w.defs[name]; ok && !w.done[name] {
			w.done[name] = true
			w.walk(def, t)
		}
		return
	}
	for _, alt := range s.OneOf { // nullable: [the value's schema, null]
		w.walk(alt, t)
	}
	t = derefType(t)
	switch t.Kind() {
	case reflect.Struct:
		if s.Properties == nil {
			return
		}
		// A copy: the top of a recursive type shares its list with its
		// definition in $defs, which is fixed on its own.
		s.Required = slices.Clone(s.Required)
		for _, f := range goFields(t) {
			if f.typ.Kind() == reflect.Pointer && !requiredByTag(t.FieldByIndex(f.index)) {
				s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == f.name })
			}
			if prop, ok := s.Properties.Get(f.name); ok {
				w.walk(prop, f.typ)
			}
		}
		if len(s.Required) == 0 {
			s.Required = nil
		}
	case reflect.Slice, reflect.Array:
		w.walk(s.Items, t.Elem())
	case reflect.Map:
		w.walk(s.AdditionalProperties, t.Elem())
		for _, values := range s.PatternProperties { // integer keys
			w.walk(values, t.Elem())
		}
	}
}

// requiredByTag reports a field tagged jsonschema:"required", which asks
// for it even where it would be optional: behind omitempty or a pointer.
func requiredByTag(f reflect.StructField) bool {
	return slices.Contains(strings.Split(f.Tag.Get("jsonschema"), ","), "required")
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// isRecursive reports whether t contains itself: a struct type reachable
// from its own fields, through pointers, slices, arrays and maps.
func isRecursive(t reflect.Type) bool {
	return reaches(t, map[reflect.Type]bool{})
}

func reaches(t reflect.Type, onPath map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return reaches(t.Elem(), onPath)
	case reflect.Map:
		return reaches(t.Key(), onPath) || reaches(t.Elem(), onPath)
	case reflect.Struct:
		if onPath[t] {
			return true
		}
		onPath[t] = true
		defer delete(onPath, t)
		for i := range t.NumField() {
			if reaches(t.Field(i).Type, onPath) {
				return true
			}
		}
	}
	return false
}

// nullablePaths lists the places of a published input schema that allow
// null: top-level properties and, one level down, the properties of their
// objects (the shapes a template has), as "name" and "parent/name". Go's
// decoding reports a bad value there as "... or null", as a read's
// conversion does.
func nullablePaths(schema json.RawMessage) map[string]bool {
	paths := map[string]bool{}
	root, err := parseSchema(schema)
	if err != nil {
		return paths
	}
	for name, raw := range root.Properties {
		n, err := parseSchema(raw)
		if err != nil {
			continue
		}
		if n.allowsNull() {
			paths[name] = true
		}
		if !n.isObject() {
			continue
		}
		for sub, raw := range n.Properties {
			if s, err := parseSchema(raw); err == nil && s.allowsNull() {
				paths[name+"/"+sub] = true
			}
		}
	}
	return paths
}

// allowsNull reports a schema under which null is valid, as far as its type
// says.
func (n *schemaNode) allowsNull() bool {
	_, _, nullable, _ := n.scalar()
	return nullable || n.any || slices.Contains(n.types(), "null")
}

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
// the adapter writes (marshalEmptyNils): null for a nil pointer, an empty
// array or object for a nil slice or map. Pointers allow null, at every
// level, so that every value the command can return conforms (a client
// may check it, and mcp-go does with server.WithOutputSchemaValidation).
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
// the adapter may write it: the properties, items and map values whose Go
// type is a pointer (withNull). A reference into $defs (a recursive
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
// null when the adapter writes null for such a value: a nil pointer, or a
// nil slice or map of a type that encodes itself (marshalEmptyNils writes the
// others empty). The extension is an anyOf of s and null, not a union of
// types, which several model providers' schema dialects refuse.
func withNull(s map[string]any, t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer:
	case reflect.Slice, reflect.Map:
		if !writesItself(t) {
			return s
		}
	default:
		return s
	}
	if len(s) == 0 {
		return s // {} allows null already
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
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
