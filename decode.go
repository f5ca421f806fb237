package adapter

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// validator is what an arguments type implements to check itself.
type validator interface{ Validate() error }

// decode turns canonical JSON arguments into a value of the command's
// arguments type and runs its validation. Everything wrong is reported at
// once, each with the argument it concerns: properties that are no
// argument, required ones missing or null, values of the wrong type,
// strings that are not one of an enum's constants. Validate runs only on
// arguments that passed all that.
func (c *command) decode(raw []byte) (any, error) {
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil || present == nil {
		return nil, &ValidationError{Errors: []FieldError{{Message: "arguments must be a JSON object"}}}
	}
	ptr := reflect.New(c.argsType)
	var errs ValidationError
	if decodeStrict(raw, ptr.Interface()) != nil {
		// The whole decode stops at the first problem; decode each argument
		// on its own to name every one.
		c.fieldErrors(present, &errs)
	}
	for _, name := range c.rules.required {
		if v, ok := present[name]; !ok || isNull(v) && !c.rules.nullable[name] {
			errs.Add(name, "is required")
		}
	}
	errs.Errors = append(errs.Errors, c.checkEnums(present)...)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if v, ok := ptr.Interface().(validator); ok {
		if err := v.Validate(); err != nil {
			return nil, asValidationError(err)
		}
	}
	return ptr.Elem().Interface(), nil
}

// fieldErrors decodes each argument on its own into its field's type and
// records what fails, in name order, looking into struct arguments' own
// fields so that every bad variable of a flattened struct is named too.
func (c *command) fieldErrors(present map[string]json.RawMessage, errs *ValidationError) {
	fieldErrorsOf(c.fields, present, errs)
}

func fieldErrorsOf(fields map[string]reflect.Type, present map[string]json.RawMessage, errs *ValidationError) {
	for _, name := range slices.Sorted(maps.Keys(present)) {
		ft, ok := fields[name]
		if !ok {
			errs.Add(name, "is not an argument of this command")
			continue
		}
		var inner map[string]json.RawMessage
		if isPlainStruct(ft) && json.Unmarshal(present[name], &inner) == nil && inner != nil {
			fieldErrorsOf(jsonFields(ft), inner, errs)
			continue
		}
		if err := decodeStrict(present[name], reflect.New(ft).Interface()); err != nil {
			if err.Field == "" {
				err.Field = name
			}
			errs.Errors = append(errs.Errors, *err)
		}
	}
}

// isPlainStruct reports a struct (or pointer to one) that encoding/json
// decodes field by field, not through a method of its own.
func isPlainStruct(t reflect.Type) bool {
	t = derefType(t)
	p := reflect.PointerTo(t)
	return t.Kind() == reflect.Struct && !p.Implements(jsonUnmarshalerType) && !p.Implements(textUnmarshalerType)
}

// decodeStrict decodes raw into dst, refusing unknown fields and trailing
// data, and describes a failure as a field error. Its Field is the innermost
// property concerned, "" when the error names none.
func decodeStrict(raw []byte, dst any) *FieldError {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return &FieldError{Message: "must be one JSON value"}
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:]
		}
		return &FieldError{Field: field, Message: "must be " + jsonTypeName(typeErr.Type)}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &FieldError{Field: strings.Trim(name, `"`), Message: "is not an argument of this command"}
	}
	// A type that decodes itself (time.Time, say) failed: its message is
	// the parser's, which says more about Go than about the argument.
	return &FieldError{Message: "must be " + jsonTypeName(reflect.TypeOf(dst).Elem())}
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// jsonTypeName names what a value of Go type t must look like in JSON.
func jsonTypeName(t reflect.Type) string {
	t = derefType(t)
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return "a valid " + t.String()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer that fits %v", t.Kind())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value of type " + t.String()
}

// checkEnums reports the enum-constrained arguments whose value is not one
// of the constants. null and absent values are left to the other checks.
func (c *command) checkEnums(present map[string]json.RawMessage) []FieldError {
	var fields []FieldError
	for _, r := range c.rules.enums {
		obj := present
		if r.parent != "" {
			obj = nil
			_ = json.Unmarshal(present[r.parent], &obj)
		}
		var s string
		if v, ok := obj[r.name]; !ok || json.Unmarshal(v, &s) != nil || slices.Contains(r.allowed, s) {
			continue
		}
		fields = append(fields, FieldError{Field: r.name, Message: enumMessage(r.allowed)})
	}
	return fields
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
