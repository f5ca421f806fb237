package adapter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/middleware"
)

// A CommandOption configures one command declared with Live or Command.
type CommandOption func(*commandConfig)

type commandConfig struct {
	confirm    bool
	reads      []string
	completers map[string]Completer
}

// NeedsConfirmation marks a command whose use a person must confirm. Such a
// command is a tool only, never a resource or a template, since a read or a
// subscription cannot ask anyone.
func NeedsConfirmation() CommandOption {
	return func(c *commandConfig) { c.confirm = true }
}

// WithReads declares keys a live command always reads, in addition to what
// each run reports with Reads. A command whose read set does not depend on
// its arguments can declare it here once.
func WithReads(keys ...string) CommandOption {
	return func(c *commandConfig) { c.reads = append(c.reads, keys...) }
}

// command is everything the adapter knows about one declared command.
type command struct {
	name        string
	description string
	live        bool
	confirm     bool
	argsType    reflect.Type
	// schema is the input schema exactly as tools/list publishes it.
	schema json.RawMessage
	// required lists the top-level properties the schema requires.
	required []string
	// enums are the schema's enum constraints, which Go's decoding of a
	// string does not check.
	enums []enumRule
	tool  mcp.Tool
	// tmpl is the URI template, nil when the command has none (reason and
	// detail say why).
	tmpl   *uriTemplate
	reason Reason
	detail string
	// resource is the plain resource scheme://name. Every command with a
	// template has one in mcp-go, as the route its reads take (see
	// read.go); it is listed only when the template is all optional.
	resource mcp.Resource
	routeURI string

	reads      []string
	completers map[string]Completer

	// call runs the user's function; handler runs it through the
	// middleware chain.
	call    func(ctx context.Context, args any) (any, error)
	handler middleware.Handler
}

// listed reports whether the plain resource appears in resources/list.
func (c *command) listed() bool { return c.tmpl != nil && c.tmpl.allOptional() }

func newCommand[A any](scheme, name, description string, live bool, opts []CommandOption) (*command, error) {
	if !validCommandName(name) {
		return nil, fmt.Errorf("command name %q: want 1 to 128 of the characters A-Z a-z 0-9 _ - .", name)
	}
	argsType := reflect.TypeFor[A]()
	if argsType.Kind() != reflect.Struct {
		return nil, fmt.Errorf("command %q: arguments type %v is not a struct", name, argsType)
	}
	var cc commandConfig
	for _, o := range opts {
		o(&cc)
	}
	schema, required, err := publishedSchema(argsType)
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", name, err)
	}
	c := &command{
		name: name, description: description, live: live, confirm: cc.confirm,
		argsType: argsType, schema: schema, required: required, enums: enumRules(schema),
		reads: cc.reads, completers: cc.completers,
	}
	c.tool = mcp.Tool{
		Name:           name,
		Description:    description,
		RawInputSchema: schema,
		Annotations: mcp.ToolAnnotation{
			ReadOnlyHint:   mcp.ToBoolPtr(live),
			IdempotentHint: mcp.ToBoolPtr(live),
		},
	}
	switch {
	case !live:
		c.reason = ReasonNotLive
	case cc.confirm:
		c.reason = ReasonNeedsConfirmation
	default:
		c.tmpl, c.reason, c.detail = deriveTemplate(scheme, name, schema, argsType)
	}
	for v := range cc.completers {
		if c.tmpl == nil || c.tmpl.variable(v) == nil {
			return nil, fmt.Errorf("command %q: completer for %q, which is not a variable of its template", name, v)
		}
	}
	if c.tmpl != nil {
		c.routeURI = scheme + "://" + name
		c.resource = mcp.NewResource(c.routeURI, name,
			mcp.WithResourceDescription(description), mcp.WithMIMEType(mimeJSON))
	}
	return c, nil
}

// variable finds a template variable by name, nil when there is none.
func (t *uriTemplate) variable(name string) *variable {
	for _, group := range [][]variable{t.path, t.query} {
		for i := range group {
			if group[i].name == name {
				return &group[i]
			}
		}
	}
	return nil
}

// publishedSchema reflects the input schema of an arguments type, as
// tools/list will publish it, and the top-level properties it requires.
func publishedSchema(t reflect.Type) (json.RawMessage, []string, error) {
	r := jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true}
	s := r.ReflectFromType(t)
	// The tool's schema is a document of its own; the draft and id that
	// invopop adds name the Go package, which is none of the agent's concern.
	s.Version, s.ID = "", ""
	if s.Properties == nil || s.Properties.Len() == 0 {
		// An empty struct still takes an object; say so explicitly so that
		// clients render a form with no fields rather than "anything".
		s.Type = "object"
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	return b, s.Required, nil
}

func validCommandName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || isAlpha(c)) {
			return false
		}
	}
	return true
}

// validator is what an arguments type implements to check itself.
type validator interface{ Validate() error }

// decode turns canonical JSON arguments into a value of the command's
// arguments type and runs its validation. Unknown properties, missing
// required ones and values of the wrong type are field errors.
func (c *command) decode(raw []byte) (any, error) {
	ptr := reflect.New(c.argsType)
	var fields []FieldError
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if fe := decodeStrict(raw, ptr.Interface()); fe != nil {
		fields = append(fields, *fe)
	}
	if len(fields) == 0 {
		var present map[string]json.RawMessage
		_ = json.Unmarshal(raw, &present)
		for _, name := range c.required {
			if _, ok := present[name]; !ok {
				fields = append(fields, FieldError{Field: name, Message: "is required"})
			}
		}
		fields = append(fields, c.checkEnums(present)...)
	}
	if len(fields) > 0 {
		return nil, &ValidationError{Errors: fields}
	}
	if v, ok := ptr.Interface().(validator); ok {
		if err := v.Validate(); err != nil {
			return nil, asValidationError(err)
		}
	}
	return ptr.Elem().Interface(), nil
}

// decodeStrict decodes raw into dst, refusing unknown fields and trailing
// data, and describes a failure as a field error.
func decodeStrict(raw []byte, dst any) *FieldError {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return &FieldError{Message: "arguments must be one JSON object"}
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return &FieldError{Message: "arguments must be a JSON object"}
		}
		return &FieldError{Field: typeErr.Field, Message: "must be " + jsonTypeName(typeErr.Type)}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &FieldError{Field: strings.Trim(name, `"`), Message: "is not an argument of this command"}
	}
	return &FieldError{Message: "arguments are not valid JSON: " + err.Error()}
}

// jsonTypeName names the JSON type a Go type decodes from.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer that fits %v", t)
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

// invoke runs the command with canonical JSON arguments through the
// middleware chain, as origin.
func (c *command) invoke(ctx context.Context, origin middleware.Origin, raw json.RawMessage) (any, error) {
	args, err := c.decode(raw)
	if err != nil {
		return nil, err
	}
	return c.invokeDecoded(ctx, origin, args, raw)
}

// invokeDecoded runs the command through the middleware chain with
// arguments already decoded (and validated) from raw. A live query decodes
// once and re-runs with the same value.
func (c *command) invokeDecoded(ctx context.Context, origin middleware.Origin, args any, raw json.RawMessage) (any, error) {
	ctx = middleware.WithOrigin(ctx, origin)
	call := &middleware.Call{
		Command: c.name,
		Args:    args,
		RawArgs: raw,
		Origin:  origin,
	}
	if origin == middleware.Agent {
		call.Session = sessionFrom(ctx)
	}
	return c.handler(ctx, call)
}

// Call runs the command named name with args (any value that encodes to
// the command's JSON arguments: its argument struct, a map, or
// json.RawMessage) through the middleware chain as the application itself
// (origin App), which rate limits do not apply to. It answers what a
// tools/call would, as Go values: the result, or a *ValidationError,
// ErrNotFound (wrapped), or the command's own error.
func (a *Adapter) Call(ctx context.Context, name string, args any) (any, error) {
	c := a.command(name)
	if c == nil {
		return nil, fmt.Errorf("adapter: no command %q", name)
	}
	var raw json.RawMessage
	switch v := args.(type) {
	case json.RawMessage:
		raw = v
	default:
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("adapter: encoding the arguments of %s: %w", name, err)
		}
		raw = b
	}
	canonical, err := canonicalArguments(raw)
	if err != nil {
		return nil, err
	}
	return c.invoke(ctx, middleware.App, canonical)
}

// enumRule is one enum constraint of the input schema: the property name
// (inside the object parent, when parent is not "") and its constants.
type enumRule struct {
	parent, name string
	allowed      []string
}

// enumRules collects the enum constraints of a published schema, on the
// top-level properties and those of their objects, one level down: the
// shapes a template has. A tools/call is checked against the same constants
// a read's conversion checks, so both answer alike.
func enumRules(schema json.RawMessage) []enumRule {
	root, err := parseSchema(schema)
	if err != nil {
		return nil
	}
	var rules []enumRule
	collect := func(parent string, props map[string]json.RawMessage) {
		for name, raw := range props {
			n, err := parseSchema(raw)
			if err != nil {
				continue
			}
			if kind, allowed, _, ok := n.scalar(); ok && kind == kindEnum {
				rules = append(rules, enumRule{parent: parent, name: name, allowed: allowed})
			}
		}
	}
	collect("", root.Properties)
	for name, raw := range root.Properties {
		if n, err := parseSchema(raw); err == nil && n.isObject() {
			collect(name, n.Properties)
		}
	}
	slices.SortFunc(rules, func(a, b enumRule) int {
		return cmp.Or(strings.Compare(a.parent, b.parent), strings.Compare(a.name, b.name))
	})
	return rules
}

// checkEnums reports the enum-constrained arguments whose value is not one
// of the constants. null and absent values are left to the decoder.
func (c *command) checkEnums(present map[string]json.RawMessage) []FieldError {
	var fields []FieldError
	for _, r := range c.enums {
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
