package adapter

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invopop/jsonschema"
)

// The types whose methods or encoding decide how encoding/json writes a
// value, and so what a schema says of it.
var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumberType    = reflect.TypeFor[json.Number]()
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

// goFields lists, in index order, the fields encoding/json decodes for
// struct type t; nil for another type. The rules are the ones json.Marshal
// documents: a struct embedded without a tag name lends its fields, one
// level deeper; of the fields a name reaches, only the shallowest compete,
// a tagged one beating untagged ones, and a tie leaves the name to none.
// Two details of how json applies them matter too: it looks into a struct
// type once, at the first depth that reaches it, and a type reached more
// than once at that depth lends each of its fields that many times, so
// that they tie.
func goFields(t reflect.Type) []goField {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	type lender struct {
		typ        reflect.Type
		index      []int
		unsettable bool
	}
	candidates := map[string][]goField{}
	lookedInto := map[reflect.Type]bool{}
	for level := []lender{{typ: t}}; len(level) > 0; {
		reached := map[reflect.Type]int{}
		for _, l := range level {
			reached[l.typ]++
		}
		var below []lender
		for _, l := range level {
			if lookedInto[l.typ] {
				continue
			}
			lookedInto[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				index := append(slices.Clip(l.index), i)
				f, lends, ok := decodedField(sf, index, l.unsettable)
				switch {
				case !ok:
				case lends:
					below = append(below, lender{typ: f.typ, index: index, unsettable: f.unsettable})
				default:
					for range reached[l.typ] {
						candidates[f.name] = append(candidates[f.name], f)
					}
				}
			}
		}
		level = below
	}
	var out []goField
	for _, fs := range candidates {
		if f, ok := shallowestField(fs); ok {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b goField) int { return slices.Compare(a.index, b.index) })
	return out
}

// decodedField is what encoding/json makes of sf, found at index: a field
// (ok), an embedded struct that lends its fields (lends, with f.typ the
// struct type), or nothing (neither: unexported, or tagged "-").
func decodedField(sf reflect.StructField, index []int, unsettable bool) (f goField, lends, ok bool) {
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return goField{}, false, false
	}
	target := sf.Type
	if target.Kind() == reflect.Pointer && target.Name() == "" {
		target = target.Elem()
	}
	if !sf.IsExported() && !(sf.Anonymous && target.Kind() == reflect.Struct) {
		return goField{}, false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if !validTagName(name) {
		name = ""
	}
	if sf.Anonymous && name == "" && target.Kind() == reflect.Struct {
		// json cannot allocate an unexported struct behind a pointer.
		unsettable = unsettable || sf.Type.Kind() == reflect.Pointer && !sf.IsExported()
		return goField{typ: target, unsettable: unsettable}, true, true
	}
	f = goField{name: cmp.Or(name, sf.Name), index: index, typ: sf.Type, tagged: name != "", unsettable: unsettable}
	if slices.Contains(strings.Split(opts, ","), "string") {
		switch target.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.String:
			f.quoted = true
		}
	}
	return f, false, true
}

// shallowestField is the field encoding/json decodes for a name reached by
// fs: of the shallowest, the one tagged, or the one alone; none on a tie.
func shallowestField(fs []goField) (goField, bool) {
	depth := len(fs[0].index)
	for _, f := range fs {
		depth = min(depth, len(f.index))
	}
	var tagged, all []goField
	for _, f := range fs {
		if len(f.index) == depth {
			all = append(all, f)
			if f.tagged {
				tagged = append(tagged, f)
			}
		}
	}
	switch {
	case len(tagged) == 1:
		return tagged[0], true
	case len(tagged) == 0 && len(all) == 1:
		return all[0], true
	}
	return goField{}, false
}

// validTagName reports whether encoding/json takes s, the name part of a
// json tag, as the field's name: letters, digits, spaces and ASCII
// punctuation but for quotes, backslash and comma. It names the field by
// its Go name otherwise.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case unicode.IsLetter(c), unicode.IsDigit(c), c == ' ':
		case c < utf8.RuneSelf && unicode.IsPunct(c) || c < utf8.RuneSelf && unicode.IsSymbol(c):
			if strings.ContainsRune("\"'`,\\", c) {
				return false
			}
		default:
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
	return checkFieldsIn(t, false, map[reflect.Type]bool{})
}

// checkWrittenFields is checkFields for what encoding/json writes, as an
// output schema describes it: a field promoted through an embedded pointer
// to an unexported struct, which Go cannot set, is written all the same.
func checkWrittenFields(t reflect.Type) error {
	return checkFieldsIn(t, true, map[reflect.Type]bool{})
}

func checkFieldsIn(t reflect.Type, written bool, seen map[reflect.Type]bool) error {
	t = derefType(t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return checkFieldsIn(t.Elem(), written, seen)
	case reflect.Map:
		return checkFieldsIn(t.Elem(), written, seen)
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
		case g.quoted && derefType(g.typ).Kind() == reflect.String && derefType(g.typ) != jsonNumberType:
			// A json.Number is a number to encoding/json: the option
			// makes it a number written as a string, as the schema says.
			return fmt.Errorf("property %q of %v (field %s): the \",string\" option on a string makes encoding/json want a quoted JSON string inside the string, which the schema cannot say", name, t, p.path)
		case g.unsettable && !written:
			return fmt.Errorf("property %q of %v (field %s): it is promoted through an embedded pointer to an unexported struct type, which encoding/json cannot set", name, t, p.path)
		}
		if err := checkKeywords(t.FieldByIndex(g.index), g.quoted); err != nil {
			return fmt.Errorf("property %q of %v (field %s): %w", name, t, p.path, err)
		}
		if err := checkFieldsIn(g.typ, written, seen); err != nil {
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
// A field with json's ",string" option (quoted) is published as a string
// whatever its type tag says, as encoding/json reads it: its tag's type
// is not checked.
func checkKeywords(sf reflect.StructField, quoted bool) error {
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
		if name == "type" && !quoted && !decodesJSONType(sf.Type, value) {
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
		if !p.Implements(m.iface) || declaresMethod(t, m.name) {
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
		return nil
	}
	return nil
}

// declaresMethod reports whether t (or *t) declares the method name
// itself, rather than having it promoted from an embedded field. reflect
// does not say so; but a promoted method is reached through a wrapper
// the compiler generates, whose position is "<autogenerated>", while a
// declared one has its own (a value method's pointer form is a wrapper
// too, so both forms are asked).
func declaresMethod(t reflect.Type, name string) bool {
	for _, in := range []reflect.Type{t, reflect.PointerTo(t)} {
		m, ok := in.MethodByName(name)
		if !ok {
			continue
		}
		pc := m.Func.Pointer()
		if f := runtime.FuncForPC(pc); f != nil {
			if file, _ := f.FileLine(pc); file != "<autogenerated>" {
				return true
			}
		}
	}
	return false
}
