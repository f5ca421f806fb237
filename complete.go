package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// completionGivenKey carries a completion request's context.arguments, the
// values of the other variables, across the middleware chain to
// completeHandler; the variable and the prefix travel in the Call.
type completionGivenKey struct{}

// chainComplete puts c's completions behind the middleware chain once, as
// register does its runs, rather than per request: what a middleware keeps
// in the handler it returns (a semaphore, a breaker) then lasts as long as
// the command, and a completion does not build the whole chain anew.
func (a *Adapter) chainComplete(c *command) {
	if c.tmpl == nil {
		return
	}
	c.completeHandler = a.chain(func(ctx context.Context, call *middleware.Call) (any, error) {
		// Read from the call, as a run reads call.Args: what the
		// middleware passed on is what runs.
		var v *variable
		if call.Completion != nil {
			v = c.tmpl.variable(call.Completion.Variable)
		}
		if v == nil {
			return nil, fmt.Errorf("completion of %s: the middleware chain passed on no variable of %s", c.name, c.tmpl.raw)
		}
		// Absent if a middleware passed on a context not derived from
		// its own: the completion then runs as if none were given.
		given, _ := ctx.Value(completionGivenKey{}).(map[string]string)
		return c.complete(ctx, v, call.Completion.Prefix, given)
	})
}

// maxCompletions is the most values completion/complete may answer with.
const maxCompletions = 100

// A Completer suggests values for one variable of a command's template, for
// completion/complete. prefix is what the user typed so far; args holds the
// other variables the client already filled in (context.arguments),
// converted to their typed values (int64 or json.Number, float64, bool,
// string, nil; a json.Number field's as the json.Number itself) where they
// convert and left as strings where they do not.
// Return the values that fit prefix, best first; the adapter sends at most
// 100 of them with the total count.
//
// An error answers completion/complete exactly as the same error returned
// by the command answers a resources/read of the reference: ErrNotFound
// (wrapped or not) as resource-not-found naming the reference, a
// *ValidationError as -32602 with its fields in data, and any other error
// as an internal error that is logged and whose text the client never sees.
// Only that last kind is logged as an Error.
type Completer func(ctx context.Context, prefix string, args map[string]any) ([]string, error)

// CompleteWith registers c as the completer of the template variable named
// variable. Declaring it for a name that is not a variable of the command's
// template panics at Live, like any other declaration error. c's errors
// answer as the command's would in a read (see Completer). It is asked only
// for a reference that is the template itself or an expanded URI a read
// would accept.
func CompleteWith(variable string, c Completer) CommandOption {
	return func(cc *commandConfig) {
		if cc.completers == nil {
			cc.completers = make(map[string]Completer)
		}
		cc.completers[variable] = c
	}
}

// completionProvider answers completion/complete for resource references.
// It is installed as mcp-go's resource completion provider by Wrap.
type completionProvider struct{ a *Adapter }

// CompleteResourceArgument completes a variable of one of the adapter's
// templates, referenced by the template itself or by an expanded URI of it.
// Enum variables complete to their constants, booleans to true and false,
// both filtered by the prefix typed (ignoring case); a variable with a
// Completer asks it; anything else completes to nothing. An expanded URI
// that a resources/read would refuse (malformed, or with arguments that do
// not convert or validate) is refused with the read's error. References the
// adapter does not own, and commands the session is not granted, go to the
// fallback provider (WithCompletionFallback) or complete to nothing, exactly
// alike.
func (p completionProvider) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	a := p.a
	c, err := a.completionTarget(ctx, uri)
	if err != nil {
		return nil, err
	}
	if c == nil {
		if a.cfg.completion != nil {
			return a.cfg.completion.CompleteResourceArgument(ctx, uri, arg, cctx)
		}
		return &mcp.Completion{Values: []string{}}, nil
	}
	v := c.tmpl.variable(arg.Name)
	if v == nil {
		// The name comes from the client and may be long: the message,
		// which mcp-go's own answer carries, has it shortened (an answer
		// longer than the edges hold would leave as mcp-go's -32603);
		// data has it whole.
		return nil, &rpcError{
			Code:    mcp.INVALID_PARAMS,
			Message: "completion: " + quoteName(arg.Name) + " is not a variable of " + c.tmpl.raw,
			Data:    &ValidationError{Errors: []FieldError{{Field: arg.Name, Message: "is not a variable of " + c.tmpl.raw}}},
		}
	}
	// Completion counts against the command's rate limit, like a read: it
	// passes the same chain, marked as a completion.
	ctx = middleware.WithOrigin(ctx, middleware.Agent)
	call := &middleware.Call{
		Command:    c.name,
		Origin:     middleware.Agent,
		Session:    sessionFrom(ctx),
		Completion: &middleware.Completion{Variable: arg.Name, Prefix: arg.Value},
	}
	ctx = context.WithValue(ctx, completionGivenKey{}, cctx.Arguments)
	res, err := c.completeHandler(ctx, call)
	if err != nil {
		return nil, a.completionError(ctx, c, uri, err)
	}
	values, ok := res.([]string)
	if !ok {
		// A middleware answered the call itself, with no list of values.
		return nil, a.completionError(ctx, c, uri, fmt.Errorf("completion of %s: the middleware chain returned %T, not []string", arg.Name, res))
	}
	return limitCompletion(values), nil
}

// completionTarget finds the command a completion reference names: its
// template string exactly, or an expanded URI of it. It returns nil, nil
// when the adapter does not own the reference or the session may not use
// the command (both go to the fallback, alike). An expanded URI is owned,
// and checked, exactly as a read of it is (resolve, then the arguments'
// schema and Validate): one a read would refuse is refused with the read's
// error, rather than completed as if it named a resource.
func (a *Adapter) completionTarget(ctx context.Context, ref string) (*command, error) {
	if c := a.templateOf(ref); c != nil {
		if !a.granted(ctx, c.name) {
			return nil, nil
		}
		return c, nil
	}
	st := a.resolve(ctx, ref)
	if st == nil || st.err == errNotGranted {
		return nil, nil
	}
	err := st.err
	if err == nil {
		_, err = st.cmd.decode(st.args)
	}
	if err != nil {
		return nil, a.readError(ctx, st.cmd, ref, err)
	}
	return st.cmd, nil
}

// templateOf is the command whose template string is exactly ref, or nil.
// A template string holds "{", which ends no command name, so the name is
// what comes before the first "/", "?" or "{".
func (a *Adapter) templateOf(ref string) *command {
	rest, ok := strings.CutPrefix(ref, a.cfg.scheme+"://")
	if !ok {
		return nil
	}
	if i := strings.IndexAny(rest, "/?{"); i >= 0 {
		rest = rest[:i]
	}
	if c := a.command(rest); c != nil && c.tmpl != nil && c.tmpl.raw == ref {
		return c
	}
	return nil
}

// complete lists the candidate values of variable v for prefix.
func (c *command) complete(ctx context.Context, v *variable, prefix string, given map[string]string) ([]string, error) {
	if fn := c.completers[v.name]; fn != nil {
		values, err := fn(ctx, prefix, c.tmpl.typedArguments(given))
		if values == nil {
			values = []string{}
		}
		return values, err
	}
	var candidates []string
	switch v.kind {
	case kindEnum:
		candidates = v.enum
	case kindBoolean:
		candidates = []string{"true", "false"}
	}
	out := []string{}
	for _, s := range candidates {
		if hasPrefixFold(s, prefix) {
			out = append(out, s)
		}
	}
	return out, nil
}

// hasPrefixFold reports whether s starts with prefix, ignoring case as
// strings.EqualFold does: character by character, since a character and
// its other case may differ in length in UTF-8 (ẞ and ß, K and k).
func hasPrefixFold(s, prefix string) bool {
	for prefix != "" {
		if s == "" {
			return false
		}
		_, n := utf8.DecodeRuneInString(s)
		_, m := utf8.DecodeRuneInString(prefix)
		if s[:n] != prefix[:m] && !strings.EqualFold(s[:n], prefix[:m]) {
			return false
		}
		s, prefix = s[n:], prefix[m:]
	}
	return true
}

// typedArguments converts the variables a completion request already has
// to their typed values where they convert; others stay strings, and names
// that are no variable are left out.
func (t *uriTemplate) typedArguments(given map[string]string) map[string]any {
	out := make(map[string]any, len(given))
	for name, s := range given {
		v := t.variable(name)
		if v == nil {
			continue
		}
		out[name] = s
		b, msg := appendValue(nil, v, s)
		if msg != "" {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var typed any
		if dec.Decode(&typed) != nil {
			continue
		}
		// A json.Number field's stays the json.Number the command would
		// get, every digit as written.
		if n, ok := typed.(json.Number); ok && !v.jsonNumber {
			if v.kind == kindInteger && !wholeNumber(s) {
				// An integer variable of a float field converts as a
				// number (appendValue): 2.5 is no integer, and the schema
				// refuses it.
				continue
			}
			if i, err := n.Int64(); err == nil && v.kind == kindInteger {
				typed = i
			} else if f, err := n.Float64(); err == nil && v.kind == kindNumber {
				typed = f
			}
		}
		out[name] = typed
	}
	return out
}

// limitCompletion caps values at the protocol's 100, saying how many
// there were.
func limitCompletion(values []string) *mcp.Completion {
	out := &mcp.Completion{Values: values, Total: len(values)}
	if len(values) > maxCompletions {
		out.Values = values[:maxCompletions]
		out.HasMore = true
	}
	return out
}

// completionError is what a failed completion of reference ref answers:
// exactly what a read of ref would answer had the command returned err, so
// that a completer signals a client error (ErrNotFound, a
// *ValidationError) the way its command does, a rate limit answers alike,
// and only an error the adapter does not know is logged and hidden. The
// edges carry the code and data (rpcError, wireError).
func (a *Adapter) completionError(ctx context.Context, c *command, ref string, err error) error {
	return a.readError(ctx, c, ref, err)
}

var _ server.ResourceCompletionProvider = completionProvider{}

// wholeNumber reports whether s, a decimal number appendValue took, is an
// integer as JSON Schema counts: by its exact value, as written.
func wholeNumber(s string) bool {
	r, ok := new(big.Rat).SetString(s)
	return ok && r.IsInt()
}
