package adapter

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/invopop/jsonschema"
)

// jsonFields maps the JSON names of a struct type's fields (promoted through
// embedded structs, as encoding/json sees them) to their types. A non-struct
// type gives an empty map.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range goFields(derefType(t)) {
		out[f.name] = f.typ
	}
	return out
}

// goField is a field as encoding/json decodes it.
type goField struct {
	name   string
	index  []int
	typ    reflect.Type
	tagged bool
	// quoted: the ",string" option, which encoding/json honours on a
	// boolean, a number or a string: the value is a JSON string holding it.
	quoted bool
	// unsettable: the field is promoted through an embedded pointer to an
	// unexported struct type, which encoding/json cannot allocate, so it
	// refuses any value for it.
	unsettable bool
}

// goFields lists the fields encoding/json decodes for struct type t, by its
// rules: exported fields and the fields promoted through embedded structs,
// where a shallower field hides a deeper one, a tagged one an untagged one
// at the same depth, and two that tie hide each other. Nil for a non-struct.
func goFields(t reflect.Type) []goField {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	type level struct {
		typ        reflect.Type
		index      []int
		unsettable bool
	}
	var all []goField
	next := []level{{typ: t}}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		// How often each struct type is embedded at this depth: twice
		// means each of its fields is there twice, and hides itself.
		count := map[reflect.Type]int{}
		for _, l := range current {
			count[l.typ]++
		}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if sf.Anonymous {
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clip(l.index), i)
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := goField{name: cmp.Or(name, sf.Name), index: index, typ: sf.Type, tagged: name != "", unsettable: l.unsettable}
					if slices.Contains(strings.Split(opts, ","), "string") {
						switch ft.Kind() {
						case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64, reflect.String:
							f.quoted = true
						}
					}
					all = append(all, f)
					if count[l.typ] > 1 {
						all = append(all, f)
					}
					continue
				}
				unsettable := l.unsettable || sf.Type.Kind() == reflect.Pointer && !sf.IsExported()
				next = append(next, level{typ: ft, index: index, unsettable: unsettable})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b goField) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(len(a.index), len(b.index)))
	})
	var out []goField
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].name == all[i].name {
			j++
		}
		if f, ok := dominantField(all[i:j]); ok {
			out = append(out, f)
		}
		i = j
	}
	slices.SortFunc(out, func(a, b goField) int { return slices.Compare(a.index, b.index) })
	return out
}

// dominantField picks the field encoding/json keeps among fields of one
// name, sorted by depth: the shallowest, if it alone is there or alone is
// tagged at that depth.
func dominantField(fields []goField) (goField, bool) {
	depth := len(fields[0].index)
	var tagged []goField
	n := 0
	for _, f := range fields {
		if len(f.index) > depth {
			break
		}
		n++
		if f.tagged {
			tagged = append(tagged, f)
		}
	}
	switch {
	case len(tagged) == 1:
		return tagged[0], true
	case len(tagged) == 0 && n == 1:
		return fields[0], true
	}
	return goField{}, false
}

// validTagName is encoding/json's test of a name in a json tag; it uses the
// field's own name instead of one that fails.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// schemaField is a property as invopop/jsonschema publishes it for a struct:
// the field it reflected last under that name, walking the fields in order
// and into embedded structs (exported or not, and any with an "inline" json
// option, which encoding/json does not know).
type schemaField struct {
	index []int
	path  string // Go's name of the field: Inner.Name
}

func schemaFields(t reflect.Type, index []int, path string, out map[string]schemaField) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tags := strings.Split(sf.Tag.Get("json"), ",")
		if tags[0] == "-" || strings.Split(sf.Tag.Get("jsonschema"), ",")[0] == "-" {
			continue
		}
		at := append(slices.Clip(index), i)
		inner := derefType(sf.Type)
		embeds := sf.Anonymous && tags[0] == "" && (sf.Type.Kind() == reflect.Struct ||
			sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct)
		if embeds || slices.Contains(tags[1:], "inline") {
			if inner.Kind() == reflect.Struct {
				schemaFields(inner, at, path+sf.Name+".", out)
			}
			continue
		}
		if !sf.Anonymous && !sf.IsExported() {
			continue
		}
		out[cmp.Or(tags[0], sf.Name)] = schemaField{index: at, path: path + sf.Name}
	}
}

// checkFields refuses a type whose published schema would name a property
// encoding/json does not decode into the field the schema describes: where
// invopop and encoding/json resolve embedded fields differently (two of one
// name at the same depth, a deeper one after a shallower one, an unexported
// embedded type, an "inline" option), or where Go cannot set the field. A
// tools/call that gives such a property (a required one must) would be
// refused however right its value, and a read the same. Every struct t
// holds, through fields, pointers, lists and maps, is checked.
func checkFields(t reflect.Type) error {
	return checkFieldsIn(t, map[reflect.Type]bool{})
}

func checkFieldsIn(t reflect.Type, seen map[reflect.Type]bool) error {
	t = derefType(t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return checkFieldsIn(t.Elem(), seen)
	case reflect.Map:
		return checkFieldsIn(t.Elem(), seen)
	case reflect.Struct:
	default:
		return nil
	}
	if t == urlType {
		// invopop's special case, which encoding/json does not share.
		return errors.New("url.URL is published as a string, but encoding/json decodes it from an object of its fields")
	}
	if err := promotedDecoder(t); err != nil {
		return err
	}
	if seen[t] || !isPlainStruct(t) || reflect.PointerTo(t).Implements(customSchemaType) || t == timeType {
		return nil
	}
	seen[t] = true
	published := map[string]schemaField{}
	schemaFields(t, nil, "", published)
	decoded := map[string]goField{}
	for _, f := range goFields(t) {
		decoded[f.name] = f
	}
	for _, name := range slices.Sorted(maps.Keys(published)) {
		p := published[name]
		g, ok := decoded[name]
		switch {
		case !ok:
			return fmt.Errorf("property %q of %v (field %s): encoding/json decodes no field of that name (two embedded fields give it at one depth, or the field is embedded unexported or inline)", name, t, p.path)
		case !slices.Equal(g.index, p.index):
			return fmt.Errorf("property %q of %v: the schema describes field %s, but encoding/json decodes field %s", name, t, p.path, fieldPath(t, g.index))
		case g.quoted && derefType(g.typ).Kind() == reflect.String:
			return fmt.Errorf("property %q of %v (field %s): the \",string\" option on a string makes encoding/json want a quoted JSON string inside the string, which the schema cannot say", name, t, p.path)
		case g.unsettable:
			return fmt.Errorf("property %q of %v (field %s): it is promoted through an embedded pointer to an unexported struct type, which encoding/json cannot set", name, t, p.path)
		}
		if err := checkKeywords(t.FieldByIndex(g.index)); err != nil {
			return fmt.Errorf("property %q of %v (field %s): %w", name, t, p.path, err)
		}
		if err := checkFieldsIn(g.typ, seen); err != nil {
			return fmt.Errorf("property %q of %v: %w", name, t, err)
		}
	}
	return nil
}

var (
	customSchemaType = reflect.TypeFor[interface{ JSONSchema() *jsonschema.Schema }]()
	timeType         = reflect.TypeFor[time.Time]()
	urlType          = reflect.TypeFor[url.URL]()
)

// fieldPath is Go's name of the field of t at index: Inner.Name.
func fieldPath(t reflect.Type, index []int) string {
	names := make([]string, len(index))
	for i, x := range index {
		f := derefType(t).Field(x)
		names[i], t = f.Name, f.Type
	}
	return strings.Join(names, ".")
}

// tagKeywords are the keywords of a jsonschema tag that invopop applies
// only to a schema of the right type, and drops silently elsewhere or when
// their value does not parse: minimum on a string, enum=a on an integer,
// enum on a boolean, minLength=many.
var tagKeywords = []string{"minLength", "maxLength", "pattern", "format", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum", "minItems", "maxItems", "uniqueItems"}

// checkKeywords refuses a field whose jsonschema tag asks for a check that
// the published schema would not hold, so that nobody would make it: each
// keyword of the tag must be in the field's schema (in its items, for a
// list, except the list's own), and each enum value among its constants.
func checkKeywords(sf reflect.StructField) error {
	tag := sf.Tag.Get("jsonschema")
	if !strings.Contains(tag, "=") {
		return nil
	}
	one := reflect.StructOf([]reflect.StructField{{Name: "F", Type: sf.Type, Tag: sf.Tag}})
	b, err := json.Marshal(reflectSchema(one, inputMapper))
	if err != nil {
		return nil // newCommand reports it
	}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(b, &doc) != nil || len(doc.Properties) != 1 {
		return nil
	}
	var prop map[string]any
	for _, raw := range doc.Properties {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&prop) != nil {
			return nil
		}
	}
	if alts, ok := prop["oneOf"].([]any); ok && len(alts) == 2 { // nullable
		prop, _ = alts[0].(map[string]any)
	}
	for _, kw := range splitTag(tag) {
		name, value, ok := strings.Cut(kw, "=")
		if name == "type" && !decodesJSONType(sf.Type, value) {
			return fmt.Errorf("its jsonschema tag %q publishes a type encoding/json does not decode into %v", kw, sf.Type)
		}
		if name == "format" && value != "date-time" && derefType(sf.Type) == timeType {
			// "date" or "time": no value would pass both the schema and Go.
			return fmt.Errorf("its jsonschema tag %q does not fit time.Time, which encoding/json reads as an RFC 3339 date-time only", kw)
		}
		if !ok || !slices.Contains(tagKeywords, name) {
			continue
		}
		in := prop
		if items, ok := prop["items"].(map[string]any); ok && name != "minItems" && name != "maxItems" && name != "uniqueItems" {
			in = items
		}
		got, ok := in[name]
		if enum, isList := got.([]any); ok && name == "enum" && isList {
			ok = slices.ContainsFunc(enum, func(v any) bool { return fmt.Sprint(v) == value })
		}
		if !ok {
			return fmt.Errorf("its jsonschema tag %q does not apply to a value of type %v, and would be neither published nor enforced", kw, sf.Type)
		}
	}
	return nil
}

// splitTag splits a jsonschema tag at its commas, as invopop does: a
// comma after a backslash is part of a value.
func splitTag(tag string) []string {
	var out []string
	for part := range strings.SplitSeq(tag, ",") {
		if n := len(out); n > 0 && strings.HasSuffix(out[n-1], "\\") {
			out[n-1] = strings.TrimSuffix(out[n-1], "\\") + "," + part
			continue
		}
		out = append(out, part)
	}
	return out
}

// typeSamples are a value of each JSON Schema type.
var typeSamples = map[string]string{
	"string": `""`, "integer": `0`, "number": `0`, "boolean": `false`,
	"array": `[]`, "object": `{}`, "null": `null`,
}

// decodesJSONType reports whether encoding/json decodes a value of JSON
// Schema type typ into t at all. A type that decodes itself is taken at
// its word, as is a type name this does not know.
func decodesJSONType(t reflect.Type, typ string) bool {
	sample, ok := typeSamples[typ]
	if !ok || isTextLike(derefType(t)) || reflect.PointerTo(derefType(t)).Implements(jsonUnmarshalerType) {
		return true
	}
	return json.Unmarshal([]byte(sample), reflect.New(t).Interface()) == nil
}

// promotedDecoder refuses a struct type that decodes itself only because
// an embedded field's UnmarshalJSON or UnmarshalText is promoted to it (a
// time.Time embedded for its fields, say), while invopop publishes its
// fields: encoding/json would hand the whole object to the method, which
// refuses it.
func promotedDecoder(t reflect.Type) error {
	p := reflect.PointerTo(t)
	for _, m := range []struct {
		name  string
		iface reflect.Type
	}{{"UnmarshalJSON", jsonUnmarshalerType}, {"UnmarshalText", textUnmarshalerType}} {
		if !p.Implements(m.iface) {
			continue
		}
		published := map[string]schemaField{}
		schemaFields(t, nil, "", published)
		if len(published) == 0 {
			return nil
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && (f.Type.Implements(m.iface) || reflect.PointerTo(f.Type).Implements(m.iface)) {
				return fmt.Errorf("%v: encoding/json decodes it with the method %s of its embedded field %s, not field by field as its schema says", t, m.name, f.Name)
			}
		}
		return nil // its own method: trusted to read its fields
	}
	return nil
}
