package adapter

import (
	"strings"
)

// duplicateKeyError is the refusal of arguments that repeat a key: on the
// argument itself at the top, else on the argument the object is in,
// with the path inside it. Keys come from the client and may be long:
// each is shortened, as the edges cannot rewrite an answer of any length.
func duplicateKeyError(at []string, key string) *ValidationError {
	const rule = "; a JSON object's keys must differ"
	if len(at) == 0 {
		return &ValidationError{Errors: []FieldError{{Field: shortKey(key), Message: "is given twice" + rule}}}
	}
	var msg strings.Builder
	if len(at) > 1 {
		msg.WriteString("item " + itemPath(at[1:]) + " ")
	}
	msg.WriteString("has the key " + quoteName(key) + " twice" + rule)
	return &ValidationError{Errors: []FieldError{{Field: shortKey(at[0]), Message: msg.String()}}}
}

// maxPathSteps is how many steps of a path inside an argument an error
// names: json nests 10,000 deep, and every step is the client's.
const maxPathSteps = 6

// itemPath is steps joined by "/", each shortened, and only the first and
// last maxPathSteps/2 of them, around "…", when there are more: a message
// of any length could not be rewritten by the edges either.
func itemPath(steps []string) string {
	var b strings.Builder
	for i, step := range steps {
		if len(steps) > maxPathSteps && i == maxPathSteps/2 {
			b.WriteString("/…")
		}
		if len(steps) > maxPathSteps && i >= maxPathSteps/2 && i < len(steps)-maxPathSteps/2 {
			continue
		}
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(shortKey(step))
	}
	return b.String()
}

// shortKey is k, cut to its first 64 bytes and "…" when longer.
func shortKey(k string) string {
	if cut, ok := cutName(k); ok {
		return cut + "…"
	}
	return k
}
