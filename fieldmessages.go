package adapter

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

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
