package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/jsonkeys"
	"github.com/mcplive/adapter/middleware"
)

// toolHandler serves tools/call for c: the arguments, decoded strictly into
// the command's type, run through the middleware chain as the agent.
func (a *Adapter) toolHandler(c *command) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, o := a.observe(ctx, Op{Kind: OpCall, Command: c.name, Start: a.now()})
		var scope string
		if c.live {
			var refused *rpcError
			if scope, refused = a.scopeOf(ctx, c.name); refused != nil {
				o.End(OutcomeRefused, refused)
				return nil, refused.wire()
			}
		}
		out, err := a.callTool(ctx, c, req, scope)
		o.End(requestOutcome(ctx, err), err)
		if err != nil {
			return a.toolError(ctx, c, err), nil
		}
		return out, nil
	}
}

// callTool runs c for a tools/call in scope (WithScope) and returns its
// result, or the error to answer as an isError result. A live command's
// is answered, as its reads are, from the result its live query keeps
// when that is current (kept.go).
func (a *Adapter) callTool(ctx context.Context, c *command, req mcp.CallToolRequest, scope string) (*mcp.CallToolResult, error) {
	raw, err := canonicalArguments(req.GetRawArguments())
	if err != nil {
		return nil, err
	}
	run := a.live.askKept(ctx, new(agentRun), c, causeCall, string(raw), scope)
	res, err := c.invoke(withAgentRun(ctx, run), middleware.Agent, raw)
	if err != nil {
		return nil, err
	}
	text, _, err := c.answerText(res, run, false)
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}
	if c.structured && len(text) > 0 && text[0] == '{' {
		// structuredContent must be an object; a list, a scalar or a nil
		// pointer result stays in the text content only.
		out.StructuredContent = json.RawMessage(text)
	}
	if link, ok := a.resultLink(ctx, c, raw); ok {
		out.Content = append(out.Content, link) // where to read or watch it (link.go)
	}
	return out, nil
}

// canonicalArguments re-encodes a tools/call's arguments as canonical JSON
// (object keys sorted), the form every invocation path hands the command.
// JSON that is not one object, or that gives a key twice anywhere
// (internal/jsonkeys), is refused.
func canonicalArguments(args any) (json.RawMessage, error) {
	if args == nil {
		return json.RawMessage("{}"), nil
	}
	if raw, ok := args.(json.RawMessage); ok {
		// Numbers stay json.Number so that integers above 2^53 keep every digit.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &ValidationError{Errors: []FieldError{{Message: "arguments are not valid JSON"}}}
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, &ValidationError{Errors: []FieldError{{Message: "arguments are not valid JSON: more follows the first value"}}}
		}
		if at, key, twice := jsonkeys.Duplicate(raw); twice {
			return nil, duplicateKeyError(at, key)
		}
		args = v
	}
	if args == nil {
		return json.RawMessage("{}"), nil
	}
	if _, ok := args.(map[string]any); !ok {
		return nil, &ValidationError{Errors: []FieldError{{Message: "arguments must be a JSON object"}}}
	}
	return json.Marshal(args)
}

// filterTools hides the tools of commands the grant function refuses. mcp-go
// applies it to tools/list and, per tool, to tools/call, which then answers
// exactly as for a tool that does not exist.
func (a *Adapter) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if a.cfg.grant == nil {
		return tools
	}
	out := tools[:0:0]
	for _, t := range tools {
		if a.command(t.Name) == nil || a.granted(ctx, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

func sessionFrom(ctx context.Context) server.ClientSession {
	return server.ClientSessionFromContext(ctx)
}
