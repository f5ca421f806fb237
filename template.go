package adapter

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// varKind is the scalar type of a template variable, as the published JSON
// schema names it.
type varKind uint8

const (
	kindString varKind = iota
	kindInteger
	kindNumber
	kindBoolean
	kindEnum // a string that must be one of variable.enum
)

func (k varKind) String() string {
	switch k {
	case kindInteger:
		return "integer"
	case kindNumber:
		return "number"
	case kindBoolean:
		return "boolean"
	case kindEnum:
		return "enum"
	default:
		return "string"
	}
}

// variable is one scalar argument of a command, one variable of its URI
// template.
type variable struct {
	// name is the variable's name in the URI, the JSON property name of the
	// argument it fills.
	name string
	// parent is the JSON property name of the struct argument this
	// variable was flattened from, "" for a top-level argument. When the
	// arguments are rebuilt, variables with a parent go back into an object
	// under that name.
	parent string
	kind   varKind
	// enum lists the allowed constants of a kindEnum variable.
	enum []string
	// nullable reports that the schema also allows null.
	nullable bool
	// required variables are path segments; optional ones the query.
	required bool
	// goKind is the Go kind of the field (reflect.Int8 … reflect.Float64,
	// reflect.String, reflect.Bool), which bounds the range an integer or
	// number may take. reflect.Invalid when unknown: then integers are
	// bounded by int64 and numbers by float64.
	goKind reflect.Kind
	// jsonNumber reports a json.Number field (goKind reflect.String): it
	// holds a number as written, unbounded and never rounded.
	jsonNumber bool
}

// uriTemplate is a command's URI template, a subset of RFC 6570:
// scheme://command/{path0}/{path1}{?query0,query1}.
type uriTemplate struct {
	scheme  string
	command string
	// path holds the required variables in name order, query the optional
	// ones in name order.
	path  []variable
	query []variable
	// raw is the template as listed: app://orders_between/{from}/{to}{?status}.
	raw string
	// requiredParents are the struct arguments the schema requires, in name
	// order: their object is sent even when none of its variables is given.
	requiredParents []string
}

// schemaNode is the part of a JSON Schema that decides templates. It is
// read from the exact bytes published in tools/list, so the template and
// the tool cannot disagree.
type schemaNode struct {
	// any is true for the schema `true` or `{}`: anything goes.
	any                  bool
	Type                 json.RawMessage            `json:"type"`
	Enum                 []any                      `json:"enum"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	OneOf                []json.RawMessage          `json:"oneOf"`
	AnyOf                []json.RawMessage          `json:"anyOf"`
	Items                json.RawMessage            `json:"items"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
}

func parseSchema(raw json.RawMessage) (*schemaNode, error) {
	trimmed := bytes.TrimSpace(raw)
	if bytes.Equal(trimmed, []byte("true")) || bytes.Equal(trimmed, []byte("{}")) {
		return &schemaNode{any: true}, nil
	}
	var n schemaNode
	if err := json.Unmarshal(trimmed, &n); err != nil {
		return nil, err
	}
	if len(n.Type) == 0 && n.Enum == nil && n.Properties == nil && n.OneOf == nil && n.AnyOf == nil && n.Items == nil {
		n.any = true
	}
	return &n, nil
}

// types returns the schema's "type" as a list ("string" or ["string","null"]).
func (n *schemaNode) types() []string {
	if len(n.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(n.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(n.Type, &many)
	return many
}

// isNull reports a schema that allows only null.
func (n *schemaNode) isNull() bool {
	t := n.types()
	return len(t) == 1 && t[0] == "null"
}

// scalar reports whether n is a scalar schema: a single type of string,
// integer, number or boolean, or an enum of string constants, optionally
// nullable (a "null" type beside it, or a oneOf/anyOf with {"type":"null"}).
func (n *schemaNode) scalar() (kind varKind, enum []string, nullable bool, ok bool) {
	if alts := n.OneOf; alts != nil || n.AnyOf != nil {
		if alts == nil {
			alts = n.AnyOf
		}
		if len(alts) != 2 || len(n.Type) != 0 || n.Enum != nil {
			return 0, nil, false, false
		}
		var value *schemaNode
		sawNull := false
		for _, raw := range alts {
			alt, err := parseSchema(raw)
			if err != nil {
				return 0, nil, false, false
			}
			if alt.isNull() {
				sawNull = true
			} else {
				value = alt
			}
		}
		if !sawNull || value == nil {
			return 0, nil, false, false
		}
		kind, enum, _, ok = value.scalar()
		return kind, enum, true, ok
	}
	var base string
	for _, t := range n.types() {
		switch {
		case t == "null":
			nullable = true
		case base == "":
			base = t
		default:
			return 0, nil, false, false // two non-null types
		}
	}
	if n.Enum != nil {
		if base != "" && base != "string" {
			return 0, nil, false, false
		}
		for _, e := range n.Enum {
			switch v := e.(type) {
			case string:
				enum = append(enum, v)
			case nil:
				nullable = true
			default:
				return 0, nil, false, false
			}
		}
		if len(enum) == 0 {
			return 0, nil, false, false
		}
		return kindEnum, enum, nullable, true
	}
	switch base {
	case "string":
		return kindString, nil, nullable, true
	case "integer":
		return kindInteger, nil, nullable, true
	case "number":
		return kindNumber, nil, nullable, true
	case "boolean":
		return kindBoolean, nil, nullable, true
	}
	return 0, nil, false, false
}

// isObject reports a schema of an object with declared properties: a
// struct.
func (n *schemaNode) isObject() bool {
	return n.Properties != nil && slices.Contains(n.types(), "object")
}

// whyNotScalar names the reason a non-scalar property schema has no place in
// a template. goType, when known, tells raw JSON from any, which publish the
// same schema.
func (n *schemaNode) whyNotScalar(goType reflect.Type) Reason {
	types := n.types()
	switch {
	case n.isObject():
		return ReasonNestedStruct
	case slices.Contains(types, "array"):
		return ReasonList
	case slices.Contains(types, "object"):
		return ReasonMap
	case n.any && goType == rawMessageType:
		return ReasonRawJSON
	case n.any && goType != nil && derefType(goType).Kind() != reflect.Interface:
		return ReasonNotScalar // a type that decodes itself (big.Int)
	case n.any:
		return ReasonAny
	}
	return ReasonNotScalar
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// deriveTemplate derives a command's URI template from its published input
// schema. It returns the template, or nil and the reason there is none with
// a detail naming the argument. argsType (the struct type A) only refines
// reasons and bounds integer ranges; the schema decides.
func deriveTemplate(scheme, command string, published json.RawMessage, argsType reflect.Type) (*uriTemplate, Reason, string) {
	root, err := parseSchema(published)
	if err != nil || !root.isObject() {
		return nil, ReasonNotScalar, "the arguments are not an object"
	}
	fields := jsonFields(argsType)
	t := &uriTemplate{scheme: scheme, command: command}
	var vars []variable
	for _, name := range slices.Sorted(maps.Keys(root.Properties)) {
		prop, err := parseSchema(root.Properties[name])
		if err != nil {
			return nil, ReasonNotScalar, name
		}
		required := slices.Contains(root.Required, name)
		if kind, enum, nullable, ok := prop.scalar(); ok {
			vars = append(vars, variable{name: name, kind: kind, enum: enum, nullable: nullable, required: required,
				goKind: scalarKind(fields[name]), jsonNumber: isJSONNumber(fields[name])})
			continue
		}
		if !prop.isObject() {
			return nil, prop.whyNotScalar(fields[name]), name
		}
		if required {
			t.requiredParents = append(t.requiredParents, name)
		}
		inner := jsonFields(fields[name])
		for _, sub := range slices.Sorted(maps.Keys(prop.Properties)) {
			subProp, err := parseSchema(prop.Properties[sub])
			if err != nil {
				return nil, ReasonNotScalar, name + "." + sub
			}
			kind, enum, nullable, ok := subProp.scalar()
			if !ok {
				return nil, subProp.whyNotScalar(inner[sub]), name + "." + sub
			}
			vars = append(vars, variable{
				name: sub, parent: name, kind: kind, enum: enum, nullable: nullable,
				required:   required && slices.Contains(prop.Required, sub),
				goKind:     scalarKind(inner[sub]),
				jsonNumber: isJSONNumber(inner[sub]),
			})
		}
	}
	seen := make(map[string]bool, len(vars))
	for _, v := range vars {
		if seen[v.name] {
			return nil, ReasonDuplicateVariable, v.name
		}
		seen[v.name] = true
		if !validVarName(v.name) {
			return nil, ReasonVariableName, v.name
		}
		if v.required {
			t.path = append(t.path, v)
		} else {
			t.query = append(t.query, v)
		}
	}
	// Each group in name order: the flattened fields were appended in their
	// parent's place, so sort again by the variable's own name.
	byName := func(a, b variable) int { return strings.Compare(a.name, b.name) }
	slices.SortStableFunc(t.path, byName)
	slices.SortStableFunc(t.query, byName)
	t.raw = t.format()
	return t, "", ""
}

// format spells the template: app://name/{a}/{b}{?c,d}.
func (t *uriTemplate) format() string {
	var b strings.Builder
	b.WriteString(t.scheme)
	b.WriteString("://")
	b.WriteString(t.command)
	for _, v := range t.path {
		b.WriteString("/{")
		b.WriteString(v.name)
		b.WriteString("}")
	}
	for i, v := range t.query {
		if i == 0 {
			b.WriteString("{?")
		} else {
			b.WriteString(",")
		}
		b.WriteString(v.name)
	}
	if len(t.query) > 0 {
		b.WriteString("}")
	}
	return b.String()
}

// allOptional reports a template without path variables: the command can
// run with no arguments, so it also has a plain resource.
func (t *uriTemplate) allOptional() bool { return len(t.path) == 0 }

// validVarName reports whether name can stand in a template unencoded:
// RFC 6570 varchar is ALPHA / DIGIT / "_" (and pct-encoded, which we do not
// allow), with "." between them.
func validVarName(name string) bool {
	if name == "" || name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// isJSONNumber reports a json.Number field, through pointers; false when
// the field is unknown (nil).
func isJSONNumber(t reflect.Type) bool {
	return t != nil && derefType(t) == jsonNumberType
}

// scalarKind is the Go kind behind a scalar field, through pointers.
func scalarKind(t reflect.Type) reflect.Kind {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return reflect.Invalid
	}
	return t.Kind()
}

// Reason says why a command has no URI template: a stable code, for
// programs (Inspect's JSON, tests, alerts), whose Description is the
// sentence for people. The zero value means the command has a template.
type Reason string

// The reasons a command is a tool only. Every one is decided by the
// command's declaration and its published input schema, except
// ReasonNotGranted, which depends on the session.
const (
	ReasonNotLive           Reason = "not_live"
	ReasonNeedsConfirmation Reason = "needs_confirmation"
	ReasonNotGranted        Reason = "not_granted"
	ReasonNestedStruct      Reason = "nested_struct"
	ReasonList              Reason = "list"
	ReasonMap               Reason = "map"
	ReasonAny               Reason = "any"
	ReasonRawJSON           Reason = "raw_json"
	ReasonNotScalar         Reason = "not_scalar"
	ReasonDuplicateVariable Reason = "duplicate_variable"
	ReasonVariableName      Reason = "variable_name"
)

var reasonDescriptions = map[Reason]string{
	ReasonNotLive:           "not live: a command that may write is a tool only",
	ReasonNeedsConfirmation: "needs confirmation: a tool only, never a resource",
	ReasonNotGranted:        "not granted to this session",
	ReasonNestedStruct:      "an argument is a struct nested more than one level deep",
	ReasonList:              "an argument is a list",
	ReasonMap:               "an argument is a map",
	ReasonAny:               "an argument is an interface (any)",
	ReasonRawJSON:           "an argument is raw JSON",
	ReasonNotScalar:         "an argument's schema is not a scalar (string, integer, number, boolean or enum of strings)",
	ReasonDuplicateVariable: "two arguments flatten to the same variable name",
	ReasonVariableName:      "an argument's name is not a valid URI template variable name",
}

// Description says what the reason means, in a sentence: "an argument is a
// list". It is "" for the zero Reason, and the code itself for a code this
// version does not know.
func (r Reason) Description() string {
	if d, ok := reasonDescriptions[r]; ok {
		return d
	}
	return string(r)
}
