package adapter

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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
// own code (Validate, UnmarshalJSON) fails the call alone (command.go).
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

// issue is one thing wrong at one place of the arguments, before the
// issues of one field are merged into its FieldError (see mergeIssues).
type issue struct {
	// path is the JSON location: property names, and item indices inside
	// lists. A required property that is missing is located where it
	// would be.
	path []string
	msg  string
	// rank orders what is wrong with one place: a value that is not of its
	// type (or does not convert, or decode into its Go field) makes the
	// schema's other complaints about it moot.
	rank issueRank
}

type issueRank uint8

const (
	rankKeyword issueRank = iota // a bound, a length, a pattern, a format...
	rankEnum                     // not one of the constants
	rankType                     // not a value of the type at all
	// rankDecode is a value that did not convert from a read's string, or
	// that Go could not decode into its field (300 for an int8): the same
	// failure on either way in, which the schema's own words must not
	// contradict.
	rankDecode
)

// schemaIssues flattens the validator's tree of errors into issues, one
// per failed keyword and place.
func schemaIssues(err error) []issue {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []issue{{msg: "arguments do not match the schema", rank: rankType}}
	}
	var out []issue
	collectIssues(verr, orElse{}, &out)
	return out
}

// orElse is what else a value may be, said after what is wrong with it
// (" or null" inside a nullable alternative), and the place of that value.
// It is said of that value only, not of what is wrong inside it: the
// fields of a nullable struct are not nullable themselves.
type orElse struct {
	suffix string
	at     []string
}

// collectIssues appends the issues of e and its causes to out.
func collectIssues(e *jsonschema.ValidationError, or orElse, out *[]issue) {
	at := func(msg string, rank issueRank, extra ...string) {
		path := append(slices.Clip(e.InstanceLocation), extra...)
		if len(extra) == 0 && slices.Equal(path, or.at) {
			msg += or.suffix
		}
		*out = append(*out, issue{path: path, msg: msg, rank: rank})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range e.Causes {
			collectIssues(c, or, out)
		}
	case *kind.OneOf, *kind.AnyOf:
		collectAlternatives(e, or, out)
	case *kind.Type:
		at(typeMessage(k.Want), rankType)
	case *kind.Enum:
		at(enumValuesMessage(k.Want), rankEnum)
	case *kind.Const:
		at("must be exactly "+jsonText(k.Want), rankKeyword)
	case *kind.Required:
		for _, name := range k.Missing {
			at("is required", rankType, name)
		}
	case *kind.DependentRequired:
		for _, name := range k.Missing {
			at("is required when "+k.Prop+" is given", rankType, name)
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			at("is not an argument of this command", rankType, name)
		}
	default:
		at(keywordMessage(e.ErrorKind), rankKeyword)
	}
}

// collectAlternatives reads a failed oneOf or anyOf. A nullable value is
// published as oneOf [its schema, {"type":"null"}]: when the value is of no
// alternative's type, that is one type error ("must be an integer or
// null"); otherwise the alternatives of the value's type say what is wrong,
// and the others are named after them ("must be at least 1 or null").
func collectAlternatives(e *jsonschema.ValidationError, or orElse, out *[]issue) {
	suffix := ""
	if slices.Equal(e.InstanceLocation, or.at) {
		suffix = or.suffix
	}
	if k, ok := e.ErrorKind.(*kind.OneOf); ok && len(k.Subschemas) > 1 {
		*out = append(*out, issue{path: e.InstanceLocation, msg: "must match exactly one alternative of the schema, not several" + suffix})
		return
	}
	var otherTypes []string
	var matchedType []*jsonschema.ValidationError
	for _, c := range e.Causes {
		// An alternative of another type than the value: not one whose
		// type error is about something inside the value.
		if t, ok := c.ErrorKind.(*kind.Type); ok && len(c.Causes) == 0 && slices.Equal(c.InstanceLocation, e.InstanceLocation) {
			otherTypes = append(otherTypes, t.Want...)
			continue
		}
		matchedType = append(matchedType, c)
	}
	switch {
	case len(matchedType) == 0:
		*out = append(*out, issue{path: e.InstanceLocation, msg: typeMessage(otherTypes) + suffix, rank: rankType})
	case len(matchedType) == 1:
		inner := suffix
		if len(otherTypes) > 0 {
			inner = " or " + strings.TrimPrefix(typeMessage(otherTypes), "must be ") + suffix
		}
		collectIssues(matchedType[0], orElse{suffix: inner, at: e.InstanceLocation}, out)
	default:
		// Several alternatives of the value's type, each failing its own
		// way: one issue that lists them.
		var alts []string
		for _, c := range matchedType {
			var sub []issue
			collectIssues(c, orElse{}, &sub)
			msgs := make([]string, len(sub))
			for i, s := range sub {
				msgs[i] = s.msg
			}
			alts = append(alts, strings.Join(msgs, " and "))
		}
		*out = append(*out, issue{path: e.InstanceLocation, msg: strings.Join(alts, ", or ") + suffix})
	}
}

// keywordMessage says what a failed keyword expected: the bound, the
// length, the pattern, the format.
func keywordMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return "must be at least " + ratText(k.Want)
	case *kind.Maximum:
		return "must be at most " + ratText(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be more than " + ratText(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + ratText(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratText(k.Want)
	case *kind.MinLength:
		return "must be at least " + plural(k.Want, "character", "characters") + " long"
	case *kind.MaxLength:
		return "must be at most " + plural(k.Want, "character", "characters") + " long"
	case *kind.Pattern:
		return `must match the pattern "` + k.Want + `"`
	case *kind.Format:
		return formatMessage(k.Want)
	case *kind.MinItems:
		return "must list at least " + plural(k.Want, "item", "items")
	case *kind.MaxItems:
		return "must list at most " + plural(k.Want, "item", "items")
	case *kind.UniqueItems:
		return "must not repeat an item (items " + strconv.Itoa(k.Duplicates[0]) + " and " +
			strconv.Itoa(k.Duplicates[1]) + " are equal)"
	case *kind.MinProperties:
		return "must have at least " + plural(k.Want, "property", "properties")
	case *kind.MaxProperties:
		return "must have at most " + plural(k.Want, "property", "properties")
	case *kind.Not:
		return "must not match the schema under \"not\""
	case *kind.FalseSchema:
		return "is not allowed"
	}
	// contains, content, propertyNames...: rare in arguments; the
	// validator's own words.
	return k.LocalizedString(message.NewPrinter(language.English))
}

// How a bad argument is described. A read's conversion, Go's decoding and
// the schema's checks all phrase their failures here, so that the same
// value gets the same words whichever way it came: page=abc in a URI and
// {"page":"abc"} in a tools/call both say "must be an integer".

// typePhrase is what a value of JSON Schema type typ is, after "must be".
func typePhrase(typ string) string {
	switch typ {
	case "integer":
		return "an integer"
	case "number":
		return "a number"
	case "boolean":
		return "true or false"
	case "string":
		return "a string"
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "null":
		return "null"
	}
	return "of type " + typ
}

// typeMessage says that a value must be of one of the types, in order:
// "must be an integer or null".
func typeMessage(types []string) string {
	phrases := make([]string, len(types))
	for i, t := range types {
		phrases[i] = typePhrase(t)
	}
	return "must be " + strings.Join(phrases, " or ")
}

// enumMessage lists the constants an enum value must be one of.
func enumMessage(enum []string) string {
	var b strings.Builder
	b.WriteString("must be one of ")
	for i, c := range enum {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(c))
	}
	return b.String()
}

// enumValuesMessage is enumMessage for a schema's constants, which may be
// of any JSON type; null among them reads as "or null", as a read's
// conversion says it.
func enumValuesMessage(values []any) string {
	var strs []string
	var others []string
	null := false
	for _, v := range values {
		switch v := v.(type) {
		case string:
			strs = append(strs, v)
		case nil:
			null = true
		default:
			others = append(others, jsonText(v))
		}
	}
	msg := "must be one of "
	if len(strs) > 0 {
		msg = enumMessage(strs)
		if len(others) > 0 {
			msg += ", "
		}
	}
	msg += strings.Join(others, ", ")
	if null {
		msg += " or null"
	}
	return msg
}

// intRangeMessage is the failure of an integer beyond what a Go field of
// kind k holds.
func intRangeMessage(k reflect.Kind) string {
	bits, signed := intRange(k)
	if signed {
		return fmt.Sprintf("must be between %d and %d", int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
	}
	return fmt.Sprintf("must be between 0 and %d", uint64(math.MaxUint64)>>(64-bits))
}

// floatRangeMessage is the failure of a number beyond what a Go field of
// kind k holds.
func floatRangeMessage(k reflect.Kind) string {
	if k == reflect.Float32 {
		return "must be between -3.4028235e+38 and 3.4028235e+38"
	}
	return "must be a finite number"
}

// formatMessages say what each asserted format looks like.
var formatMessages = map[string]string{
	"date":          "must be a date like 2024-05-31",
	"date-time":     "must be a date and time like 2024-05-31T13:45:00Z",
	"time":          "must be a time with an offset like 13:45:00Z",
	"email":         "must be an email address like ada@example.com",
	"uuid":          "must be a UUID like 123e4567-e89b-12d3-a456-426614174000",
	"uri":           "must be an absolute URI like https://example.com/a",
	"uri-reference": "must be a URI reference like /a?b=c",
	"ipv4":          "must be an IPv4 address like 192.0.2.1",
	"ipv6":          "must be an IPv6 address like 2001:db8::1",
	"hostname":      "must be a host name like example.com",
	"duration":      "must be an ISO 8601 duration like P3DT4H",
}

// formatMessage says what a value of format f must look like; the format's
// name is given too, as the schema spells it.
func formatMessage(f string) string {
	msg, ok := formatMessages[f]
	if !ok {
		msg = "must be a valid " + f
	}
	return msg + " (format " + strconv.Quote(f) + ")"
}

// ratText writes a schema's bound, which the validator holds as an exact
// fraction, as the decimal the schema spelled.
func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	if n, exact := r.FloatPrec(); exact {
		return r.FloatString(n)
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// plural is "1 item" or "2 items".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// jsonText is v as JSON, for a message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
