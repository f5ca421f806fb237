package adapter

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

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
