package adapter

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/digest"
	"github.com/mcplive/adapter/middleware"
)

// How a read reaches its command.
//
// mcp-go matches resources/read against templates with lenient regular
// expressions, in random order, and drops the arguments when its own match
// fails. The adapter therefore parses every URI it owns itself, before
// mcp-go looks: a before-read hook (routeRead) recognises scheme://command,
// parses and converts the URI strictly, leaves the outcome in the request's
// _meta under readStateKey, and points Params.URI at the command's plain
// resource scheme://command, which mcp-go finds by exact lookup, ahead of
// every template. That resource's handler (readHandler) picks the outcome up
// and runs the command, or answers the outcome's error: a URI that does not
// fit, or a command the session is not granted, is resource-not-found for
// the era, through server.NewHandlerError, which mcp-go sends as it is. URIs
// the adapter does not own pass untouched to the user's own resources and
// templates.

// readStateKey is the _meta key under which routeRead hands its outcome to
// readHandler. The value is a Go pointer, which JSON from a client cannot
// forge; routeRead deletes any value a client sent.
const readStateKey = "io.github.mcplive/read"

// readState is what routeRead learned of a URI the adapter owns.
type readState struct {
	uri  string // as the client sent it
	cmd  *command
	args []byte // canonical JSON arguments, when err is nil
	err  error  // a *uriError, a *ValidationError, not granted, or no scope
	// scope is the request's (WithScope); "" without one.
	scope string
	// version is the version of a read's result (MetaVersion), for the
	// after-read hook to put in its _meta; want, the version a
	// subscription's client last saw ("" for none).
	version, want string
	// clock times the parse and the conversion, with an Observer only.
	clock readClock
	// run tells the innermost step that this is a read, and whether its
	// query's kept result answered (kept.go).
	run agentRun
}

// routeRead is the before-read hook described above.
func (a *Adapter) routeRead(ctx context.Context, _ any, req *mcp.ReadResourceRequest) {
	if m := req.Params.Meta; m != nil {
		delete(m.AdditionalFields, readStateKey)
	}
	st := a.resolve(ctx, req.Params.URI)
	if st == nil {
		return
	}
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = map[string]any{}
	}
	req.Params.Meta.AdditionalFields[readStateKey] = st
	req.Params.URI = st.cmd.routeURI
}

// errNotGranted marks a URI whose command the session may not use; it
// answers exactly as a URI no command owns (readError).
var errNotGranted = &rpcError{Message: "not granted"}

// resolve parses and converts uri when the adapter owns it: it names a live
// command with a template. It returns nil for URIs the adapter does not own.
func (a *Adapter) resolve(ctx context.Context, uri string) *readState {
	name, ok := splitCommand(a.cfg.scheme, uri)
	if !ok {
		return nil
	}
	c := a.command(name)
	if c == nil || c.tmpl == nil {
		return nil
	}
	st := &readState{uri: uri, cmd: c}
	if !a.granted(ctx, name) {
		st.err = errNotGranted
		return st
	}
	var refused *rpcError
	if st.scope, refused = a.scopeOf(ctx, name); refused != nil {
		st.err = refused
		return st
	}
	st.clock.start = a.now()
	values, err := c.tmpl.parse(uri)
	st.clock.parsed = a.now()
	if err != nil {
		st.err = err
		return st
	}
	args, err := c.argsFromURI(values)
	st.clock.converted = a.now()
	if err != nil {
		st.err = err
		return st
	}
	st.args = args
	return st
}

// readStateFrom finds routeRead's outcome in a request.
func readStateFrom(req mcp.ReadResourceRequest) *readState {
	if m := req.Params.Meta; m != nil {
		st, _ := m.AdditionalFields[readStateKey].(*readState)
		return st
	}
	return nil
}

// readHandler serves the reads routed to c: the command runs as the agent,
// through the same path as a tools/call, and the result is one
// application/json text content whose URI is the one the client sent. The
// Observer, if any, sees each phase (observe).
func (a *Adapter) readHandler(c *command) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		st := readStateFrom(req)
		if st == nil || st.cmd != c {
			// Reached by mcp-go's own matching, not through routeRead: a
			// hook of the user's removed the outcome. Refuse rather than
			// guess at arguments mcp-go may have dropped.
			return nil, notFound(ctx, req.Params.URI, "").wire()
		}
		start := st.clock.start
		if start.IsZero() {
			start = a.now() // not granted: nothing was parsed
		}
		ctx, o := a.observe(ctx, Op{Kind: OpRead, Command: c.name, URI: st.uri, Start: start})
		st.clock.observePhases(o)
		contents, err := a.read(ctx, o, c, st)
		o.End(requestOutcome(ctx, err), err)
		if err != nil {
			return nil, a.readError(ctx, c, st.uri, err).wire()
		}
		return contents, nil
	}
}

// read runs c for the read st, telling o how long validating the arguments
// and running the command took.
func (a *Adapter) read(ctx context.Context, o Observation, c *command, st *readState) ([]mcp.ResourceContents, error) {
	if st.err != nil {
		return nil, st.err
	}
	began := a.now()
	args, err := c.decode(st.args)
	validated := a.now()
	o.Phase(PhaseValidate, began, validated)
	if err != nil {
		return nil, err
	}
	run := a.live.askKept(ctx, &st.run, c, causeRead, string(st.args), st.scope)
	res, err := c.invokeDecoded(withAgentRun(ctx, run), middleware.Agent, args, st.args)
	phase := PhaseCommand
	if run.answer {
		phase = PhaseKept
	}
	o.Phase(phase, validated, a.now())
	if err != nil {
		return nil, err
	}
	text, version, err := c.answerText(res, run, true)
	if err != nil {
		return nil, err
	}
	st.version = versionText(version)
	return []mcp.ResourceContents{mcp.TextResourceContents{
		URI: st.uri, MIMEType: mimeJSON, Text: text,
	}}, nil
}

// answerText is the JSON a read or a tools/call of c answers for res,
// what the chain returned for run, and, when withVersion, its version
// (MetaVersion): the content digest of that JSON.
func (c *command) answerText(res any, run *agentRun, withVersion bool) (text string, version digest.Digest, err error) {
	if kept, ok := res.(middleware.KeptResult); ok {
		if run.answer && kept.JSON == run.text {
			return kept.JSON, run.version, nil
		}
		// A middleware's own: its JSON is the answer.
		if withVersion {
			version = digest.Content([]byte(kept.JSON))
		}
		return kept.JSON, version, nil
	}
	b, err := c.marshalResult(res)
	if err != nil {
		return "", version, err
	}
	if withVersion {
		version = digest.Content(b)
	}
	return string(b), version, nil
}

// readClock is when the phases of a read that routeRead runs began and
// ended, with an Observer: the parse from start to parsed, the conversion
// from parsed to converted. A zero time is a phase that did not run, or
// a read no Observer sees.
type readClock struct {
	start, parsed, converted time.Time
}

// observePhases reports the phases routeRead ran.
func (k *readClock) observePhases(o Observation) {
	if k.parsed.IsZero() {
		return
	}
	o.Phase(PhaseParse, k.start, k.parsed)
	if !k.converted.IsZero() {
		o.Phase(PhaseConvert, k.parsed, k.converted)
	}
}
