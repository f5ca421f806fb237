package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The link of a tools/call result to what the agent can watch.
//
// A tools/call of a live command with a template answers, beside its
// result, a resource_link to the expanded URI of its arguments: the URI a
// read or a subscription of the same arguments uses, so that an agent that
// called the tool learns where to watch the result. The URI is canonical:
// the template expanded (expand) from the arguments a read of it converts
// to (convert), so that every call with equal arguments links the same
// URI, whatever spelling of a number the call used.
//
// A link is given only when it reads what the call answered: the arguments
// a read of the URI decodes to are those the call decoded to. Arguments a
// URI cannot carry (a null a string variable cannot spell, an empty path
// segment) get no link.

// linkDescription is what a resource_link says of itself: few words, since
// the agent pays for each.
const linkDescription = "The live result: read it again, or subscribe to hear when it changes."

// resultLink is the resource_link of a tools/call of c with the canonical
// arguments raw, and whether there is one: only for a live command with a
// template that answers structured results (WithoutStructuredOutput asks
// for JSON text only), to a client whose protocol knows resource links
// (2025-06-18 or later).
func (a *Adapter) resultLink(ctx context.Context, c *command, raw json.RawMessage) (mcp.ResourceLink, bool) {
	if c.tmpl == nil || !c.structured || server.RequestProtocolVersion(ctx) < mcp.ProtocolVersion20250618 {
		return mcp.ResourceLink{}, false
	}
	uri, ok := c.linkURI(raw)
	if !ok {
		return mcp.ResourceLink{}, false
	}
	link := mcp.NewResourceLink(uri, c.name, linkDescription, mimeJSON)
	link.Title = c.title
	return link, true
}

// linkURI is the canonical expanded URI of the call's arguments raw (see
// above), and false when there is none. Arguments that are canonical as
// the call spelled them, the common case, cost one decoding and one
// conversion; others are decoded twice more, to be sure of what the URI
// reads.
func (c *command) linkURI(raw json.RawMessage) (uri string, ok bool) {
	t := c.tmpl
	values, ok := t.valuesOf(raw)
	if !ok {
		return "", false
	}
	canon, verr := t.convert(values)
	if verr != nil {
		return "", false
	}
	respelled := !bytes.Equal(raw, canon)
	if respelled {
		if !c.sameArguments(raw, canon) {
			return "", false
		}
		if values, ok = t.valuesOf(canon); !ok {
			return "", false
		}
	}
	if uri, ok = t.expand(values); !ok {
		return "", false
	}
	// The URI reads back what it was expanded from, or it is no link.
	back, err := t.parse(uri)
	if err != nil || !maps.Equal(back, values) {
		return "", false
	}
	if respelled {
		if again, verr := t.convert(back); verr != nil || !bytes.Equal(again, canon) {
			return "", false
		}
	}
	return uri, true
}

// sameArguments reports whether a and b decode to equal arguments of c.
// The call decoded a already; a decode that fails, or the panic of an
// UnmarshalJSON of the user's, is no.
func (c *command) sameArguments(a, b []byte) (same bool) {
	var err error
	defer recoverUserPanic(c.logger, c.name, "checking a result link's arguments", &err)
	pa, pb := reflect.New(c.argsType), reflect.New(c.argsType)
	if decodeStrict(a, pa.Interface()) != nil || decodeStrict(b, pb.Interface()) != nil {
		return false
	}
	return reflect.DeepEqual(pa.Elem().Interface(), pb.Elem().Interface())
}

// valuesOf is the string of each variable of t that the JSON arguments raw
// give, as a URI spells it: the values expand takes. A struct argument's
// fields are its variables; one that is null or {} gives none. ok is
// false when the arguments hold anything a URI cannot spell.
func (t *uriTemplate) valuesOf(raw json.RawMessage) (map[string]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil {
		return nil, false
	}
	values := make(map[string]string, len(obj))
	put := func(parent, name string, x any) bool {
		v := t.variable(name)
		if v == nil || v.parent != parent {
			return false
		}
		s, ok := v.spell(x)
		values[name] = s
		return ok
	}
	for name, x := range obj {
		if v := t.variable(name); v != nil && v.parent == "" {
			if !put("", name, x) {
				return nil, false
			}
			continue
		}
		if !slices.Contains(t.parents(), name) {
			return nil, false
		}
		fields, isObject := x.(map[string]any)
		if x != nil && !isObject {
			return nil, false
		}
		for sub, y := range fields {
			if !put(name, sub, y) {
				return nil, false
			}
		}
	}
	return values, true
}

// parents are the names of the struct arguments whose fields are
// variables of t.
func (t *uriTemplate) parents() []string {
	var out []string
	for _, group := range [][]variable{t.path, t.query} {
		for i := range group {
			if p := group[i].parent; p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// spell is the string a URI gives v for x, a JSON value decoded with
// UseNumber, and whether it has one. A number is spelled as the JSON
// wrote it, which convert reads as a URI's number (2.0 and 1e1 included,
// for a float field whose schema says integer).
func (v *variable) spell(x any) (string, bool) {
	switch x := x.(type) {
	case string:
		return x, v.kind == kindString || v.kind == kindEnum
	case bool:
		if x {
			return "true", v.kind == kindBoolean
		}
		return "false", v.kind == kindBoolean
	case json.Number:
		return string(x), v.kind == kindNumber || v.kind == kindInteger
	case nil:
		// "null" spells null for a nullable variable but a string, whose
		// "null" is the word, and an enum that has it as a constant.
		return "null", v.nullable && v.kind != kindString && !(v.kind == kindEnum && slices.Contains(v.enum, "null"))
	}
	return "", false
}
