package adapter

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// publishedSchema reflects the input schema of an arguments type, as
// tools/list will publish it, and the top-level properties it requires.
//
// invopop marks every field without omitempty required, pointers included.
// A pointer is Go's optional value, so pointer fields are taken out of the
// required lists, at every level: a nil pointer is what an absent argument
// decodes to.
func publishedSchema(t reflect.Type) (json.RawMessage, []string, error) {
	r := jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true}
	s := r.ReflectFromType(t)
	// The tool's schema is a document of its own; the draft and id that
	// invopop adds name the Go package, which is none of the agent's concern.
	s.Version, s.ID = "", ""
	if s.Properties == nil || s.Properties.Len() == 0 {
		// An empty struct still takes an object; say so explicitly so that
		// clients render a form with no fields rather than "anything".
		s.Type = "object"
	}
	optionalPointers(s, t)
	b, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	return b, s.Required, nil
}

// optionalPointers removes the pointer fields of struct type t from the
// required list of s, its schema, and does the same for the properties
// that are structs themselves.
func optionalPointers(s *jsonschema.Schema, t reflect.Type) {
	if s == nil || s.Properties == nil {
		return
	}
	for name, ft := range jsonFields(t) {
		if ft.Kind() == reflect.Pointer {
			s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
		}
		if prop, ok := s.Properties.Get(name); ok {
			optionalPointers(prop, derefType(ft))
		}
	}
	if len(s.Required) == 0 {
		s.Required = nil
	}
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// argRules are what decoding checks beyond what encoding/json does, read
// from the published schema so that a tools/call is held to the same rules
// as a read's conversion.
type argRules struct {
	// required lists the top-level properties the schema requires.
	required []string
	// nullable holds the top-level properties whose schema allows null.
	nullable map[string]bool
	// enums are the enum constraints, which Go's decoding of a string does
	// not check.
	enums []enumRule
}

// enumRule is one enum constraint of the input schema: the property name
// (inside the object parent, when parent is not "") and its constants.
type enumRule struct {
	parent, name string
	allowed      []string
}

// rulesOf collects the argument rules of a published schema: the top-level
// properties and those of their objects, one level down, the shapes a
// template has.
func rulesOf(schema json.RawMessage, required []string) argRules {
	rules := argRules{required: required, nullable: map[string]bool{}}
	root, err := parseSchema(schema)
	if err != nil {
		return rules
	}
	collect := func(parent string, props map[string]json.RawMessage) {
		for name, raw := range props {
			n, err := parseSchema(raw)
			if err != nil {
				continue
			}
			kind, allowed, nullable, ok := n.scalar()
			if parent == "" && (nullable || n.any || slices.Contains(n.types(), "null")) {
				rules.nullable[name] = true
			}
			if ok && kind == kindEnum {
				rules.enums = append(rules.enums, enumRule{parent: parent, name: name, allowed: allowed})
			}
		}
	}
	collect("", root.Properties)
	for name, raw := range root.Properties {
		if n, err := parseSchema(raw); err == nil && n.isObject() {
			collect(name, n.Properties)
		}
	}
	slices.SortFunc(rules.enums, func(a, b enumRule) int {
		return cmp.Or(strings.Compare(a.parent, b.parent), strings.Compare(a.name, b.name))
	})
	return rules
}
