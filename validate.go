package adapter

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// How arguments are checked.
//
// Every way into a command (a tools/call, a read of an expanded URI, a
// subscription, Adapter.Call) hands it canonical JSON arguments, which are
// held to the exact input schema tools/list publishes: types, required
// properties, enums, bounds, lengths, patterns, formats, items. The schema
// is compiled once, when the command is declared, by
// github.com/santhosh-tekuri/jsonschema/v6: a complete, maintained
// implementation of drafts 4 to 2020-12 that mcp-go's own module graph
// already carries, whose errors are typed (kind.Minimum and so on) and
// located, so that each can be told as a message about its field. v6.0.3
// fixes the instance location of list items and the "email" format.
//
// Then Go decodes the arguments into the command's type, which may refuse
// what the schema allows (300 for an int8), and the type's Validate method
// runs.
//
// One answer names every failing field. A read's values that do not
// convert, the schema's violations, the values Go cannot decode and, for
// the fields that passed all that, Validate's errors come together in one
// *ValidationError, one FieldError per field, in the order of the fields'
// JSON locations, followed by Validate's.

// argsSchemaURL names the compiled input schema inside its compiler; it is
// never fetched.
const argsSchemaURL = "urn:mcplive:arguments"

// compileSchema compiles a published input schema once, with formats
// asserted rather than only annotated: a value that claims format "date"
// and is no date is refused. A schema the validator cannot compile (a
// pattern Go's regexp does not support, a $ref to elsewhere) is an error of
// the declaration.
func compileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(argsSchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(argsSchemaURL)
}

// decode turns canonical JSON arguments into a value of the command's
// arguments type, checked as described above.
func (c *command) decode(raw []byte) (any, error) {
	return c.check(raw, nil)
}

// argsFromURI converts the values of a read. When some do not convert, the
// others are still checked, so that the answer names every bad field.
func (c *command) argsFromURI(values map[string]string) (json.RawMessage, error) {
	raw, verr := c.tmpl.convert(values)
	if verr == nil {
		return raw, c.checkWrittenNumbers(values, raw)
	}
	prior := make([]issue, len(verr.Errors))
	for i, fe := range verr.Errors {
		path := []string{fe.Field}
		if v := c.tmpl.variable(fe.Field); v != nil && v.parent != "" {
			path = []string{v.parent, fe.Field}
		}
		prior[i] = issue{path: path, msg: fe.Message, rank: rankDecode}
	}
	_, err := c.check(raw, prior)
	return nil, err
}

// check decodes and checks raw. prior are the failures of a read's
// conversion, whose fields raw leaves out. A panic of the arguments type's
// own code (Validate, UnmarshalJSON) fails the call alone (userpanic.go).
func (c *command) check(raw []byte, prior []issue) (args any, err error) {
	defer recoverUserPanic(c.logger, c.name, "checking the arguments", &err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	obj, isObject := inst.(map[string]any)
	if err != nil || !isObject {
		return nil, &ValidationError{Errors: []FieldError{{Message: "arguments must be a JSON object"}}}
	}
	issues := prior
	outOfScaleIssues(inst, nil, &issues)
	if err := c.inputSchema.Validate(inst); err != nil {
		issues = append(issues, schemaIssues(err)...)
	}
	if len(issues) == 0 {
		// The common case: one decoding, then Validate.
		ptr := reflect.New(c.argsType)
		if decodeStrict(raw, ptr.Interface()) == nil {
			if c.decodedKeys {
				if at, first, second, twice := collapsedKey(c.argsType, obj, nil); twice {
					return nil, collapsedKeyError(at, first, second)
				}
			}
			if !hasNumberBeyond(inst, c.exactDigits) {
				return c.validate(ptr)
			}
			if rounded, issues := c.recheck(inst, ptr); issues != nil {
				return nil, c.report(rounded, issues)
			}
			return c.validate(ptr)
		}
	}
	return nil, c.report(obj, issues)
}

// validate runs the arguments type's Validate method, if it has one, on
// arguments that passed everything else. An empty *ValidationError (a
// Validate that returned &errs rather than errs.Err()) names nothing wrong,
// and passes.
func (c *command) validate(ptr reflect.Value) (any, error) {
	if v, ok := ptr.Interface().(validator); ok {
		if err := v.Validate(); err != nil {
			if fields := mergeFieldErrors(asValidationError(err).Errors); len(fields) > 0 {
				return nil, &ValidationError{Errors: fields}
			}
		}
	}
	return ptr.Elem().Interface(), nil
}

// validator is what an arguments type implements to check itself.
type validator interface{ Validate() error }

// report builds the answer for arguments that failed: the issues found so
// far, Go's decoding failures of the other fields, and what Validate says
// of the fields that passed.
func (c *command) report(obj map[string]any, issues []issue) *ValidationError {
	settled := make(map[string]bool, len(issues))
	for _, is := range issues {
		if is.rank >= rankEnum {
			settled[pathKey(is.path)] = true
		}
	}
	c.decodeIssues(nil, c.argsType, obj, settled, &issues)
	issues = settle(issues)
	if len(issues) == 0 {
		// Go refused the whole, but no part of it: name no field.
		issues = []issue{{msg: "arguments do not decode into the command's type", rank: rankType}}
	}
	fields, failed := fieldErrors(c.argsType, issues)
	fields = append(fields, c.validatePartial(obj, failed)...)
	return &ValidationError{Errors: capFieldErrors(mergeFieldErrors(fields))}
}

// failedPlaces are the places of the arguments that failed, to be left out
// before Validate runs, and the field names Validate must then not speak of.
type failedPlaces struct {
	places [][]string
	names  map[string]bool
}

// validatePartial runs Validate on the arguments without the places that
// failed, as if they had not been given, and keeps what it says of the
// other fields. What it says of no field in particular is dropped: it may
// be about the missing places. A Validate that panics on arguments the
// schema would have refused adds nothing.
func (c *command) validatePartial(obj map[string]any, failed failedPlaces) (errs []FieldError) {
	ptr := reflect.New(c.argsType)
	v, ok := ptr.Interface().(validator)
	if !ok {
		return nil
	}
	for _, place := range failed.places {
		removePlace(obj, place)
	}
	b, err := json.Marshal(obj)
	if err != nil || decodeStrict(b, ptr.Interface()) != nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			errs = nil
		}
	}()
	verr := v.Validate()
	if verr == nil {
		return nil
	}
	for _, fe := range asValidationError(verr).Errors {
		if fe.Field != "" && !failed.names[fe.Field] {
			errs = append(errs, fe)
		}
	}
	return errs
}

// removePlace deletes the property at place (a path of property names) from
// obj, if it is there.
func removePlace(obj map[string]any, place []string) {
	for len(place) > 1 {
		inner, ok := obj[place[0]].(map[string]any)
		if !ok {
			return
		}
		obj, place = inner, place[1:]
	}
	if len(place) == 1 {
		delete(obj, place[0])
	}
}

// settle orders issues by place and drops the moot ones: at one place only
// the highest rank counts (a value that is no integer is not also below
// the minimum), and below a place whose value is not of its type nothing
// else does.
func settle(issues []issue) []issue {
	slices.SortStableFunc(issues, func(a, b issue) int { return comparePaths(a.path, b.path) })
	top := make(map[string]issueRank, len(issues))
	for _, is := range issues {
		k := pathKey(is.path)
		top[k] = max(top[k], is.rank)
	}
	out := issues[:0:0]
	seen := make(map[string]bool, len(issues))
	for _, is := range issues {
		k := pathKey(is.path)
		if is.rank < top[k] || seen[k+"\x00"+is.msg] || underFailedType(is.path, top) {
			continue
		}
		seen[k+"\x00"+is.msg] = true
		out = append(out, is)
	}
	return out
}

// underFailedType reports a path below one whose value is not of its type.
func underFailedType(path []string, top map[string]issueRank) bool {
	for i := range len(path) {
		if top[pathKey(path[:i])] >= rankType {
			return true
		}
	}
	return false
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// comparePaths orders JSON locations element by element, item indices by
// their number, so that item 10 follows item 9.
func comparePaths(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if c := compareElems(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareElems(a, b string) int {
	if isIndex(a) && isIndex(b) {
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	}
	return strings.Compare(a, b)
}

// isIndex reports digits without a leading zero: how a list index is
// written in a location.
func isIndex(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// fieldErrors turns settled issues about arguments of type t into field
// errors and says which places failed. An issue's field is the deepest
// struct field on its path: a variable of a flattened struct is named by its
// own name, as the template names it; an item of a list or a value of a map
// by the list or map, with the item's index or the key in the message
// ("item 2 must be at least 1", "key a must be a string").
func fieldErrors(t reflect.Type, issues []issue) ([]FieldError, failedPlaces) {
	failed := failedPlaces{names: map[string]bool{}}
	out := make([]FieldError, 0, len(issues))
	for _, is := range issues {
		depth, holder := fieldDepth(t, is.path)
		if depth == 0 {
			out = append(out, FieldError{Message: is.msg})
			continue
		}
		field, msg := is.path[depth-1], is.msg
		if rest := is.path[depth:]; len(rest) > 0 {
			word := "item "
			if holder == reflect.Map {
				word = "key "
			}
			msg = word + strings.Join(rest, "/") + " " + msg
		}
		out = append(out, FieldError{Field: field, Message: msg})
		place := is.path[:depth]
		if len(place) > 2 {
			// Deeper than a flattened struct: leave out the whole argument.
			place = place[:1]
		}
		failed.places = append(failed.places, place)
		failed.names[field] = true
		failed.names[place[0]] = true
	}
	return out, failed
}

// fieldDepth is how many elements of path lead to its field, following the
// fields of plain structs from t, and the kind of the value the field holds
// the rest of the path in (a list or a map), if any.
func fieldDepth(t reflect.Type, path []string) (int, reflect.Kind) {
	for i, el := range path {
		if !isPlainStruct(t) {
			return i, derefType(t).Kind()
		}
		ft, ok := jsonFields(t)[el]
		if !ok {
			return i + 1, reflect.Invalid // a property no field has
		}
		t = ft
	}
	return len(path), reflect.Invalid
}

// mergeFieldErrors makes one FieldError per field, in the order the fields
// first appear, joining the messages of a field with " and ".
func mergeFieldErrors(errs []FieldError) []FieldError {
	out := make([]FieldError, 0, len(errs))
	at := make(map[string]int, len(errs))
	said := make(map[FieldError]bool, len(errs))
	for _, fe := range errs {
		if said[fe] {
			continue
		}
		said[fe] = true
		i, ok := at[fe.Field]
		if !ok {
			at[fe.Field] = len(out)
			out = append(out, fe)
			continue
		}
		out[i].Message += " and " + fe.Message
	}
	return out
}

// maxFieldErrors bounds an answer to hostile arguments (thousands of
// unknown properties): the fields past it are counted, not named.
const maxFieldErrors = 100

func capFieldErrors(errs []FieldError) []FieldError {
	if len(errs) <= maxFieldErrors {
		return errs
	}
	more := fmt.Sprintf("%d more fields are wrong", len(errs)-maxFieldErrors)
	errs = errs[:maxFieldErrors]
	// The count is said of no field; join what else is, so that no field
	// (not even "") appears twice.
	for i := range errs {
		if errs[i].Field == "" {
			errs[i].Message += " and " + more
			return errs
		}
	}
	return append(errs, FieldError{Message: more})
}
