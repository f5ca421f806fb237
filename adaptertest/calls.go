package adaptertest

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// Read reads uri (resources/read) and returns the text of its content: for
// an expanded URI of a live command, the command's result as JSON. The
// error is a *WireError when the server answered one, and an error of its
// own when the result holds no text content.
func (c *Client) Read(uri string) (string, error) {
	c.t.Helper()
	res, werr := c.ReadRaw(uri)
	if werr != nil {
		return "", werr
	}
	for _, content := range res.Contents {
		if text, ok := content.(mcp.TextResourceContents); ok {
			return text.Text, nil
		}
	}
	return "", fmt.Errorf("adaptertest: %s: the result has no text content", uri)
}

// ReadRaw reads uri (resources/read) and returns the whole result, or the
// error the server answered, with its code and data.
func (c *Client) ReadRaw(uri string) (*mcp.ReadResourceResult, *WireError) {
	c.t.Helper()
	raw, werr := c.call(string(mcp.MethodResourcesRead), mcp.ReadResourceParams{URI: uri})
	if werr != nil {
		return nil, werr
	}
	res, err := mcp.ParseReadResourceResult(&raw)
	if err != nil {
		c.t.Fatalf("adaptertest: resources/read %s: %v", uri, err)
	}
	return res, nil
}

// ListTemplates lists the resource templates the session sees
// (resources/templates/list), following every page.
func (c *Client) ListTemplates() ([]mcp.ResourceTemplate, error) {
	c.t.Helper()
	return listAll(c, mcp.MethodResourcesTemplatesList,
		func(r *mcp.ListResourceTemplatesResult) ([]mcp.ResourceTemplate, mcp.Cursor) {
			return r.ResourceTemplates, r.NextCursor
		})
}

// ListResources lists the resources the session sees (resources/list),
// following every page.
func (c *Client) ListResources() ([]mcp.Resource, error) {
	c.t.Helper()
	return listAll(c, mcp.MethodResourcesList,
		func(r *mcp.ListResourcesResult) ([]mcp.Resource, mcp.Cursor) {
			return r.Resources, r.NextCursor
		})
}

// ListTools lists the tools the session sees (tools/list), following every
// page.
func (c *Client) ListTools() ([]mcp.Tool, error) {
	c.t.Helper()
	return listAll(c, mcp.MethodToolsList,
		func(r *mcp.ListToolsResult) ([]mcp.Tool, mcp.Cursor) {
			return r.Tools, r.NextCursor
		})
}

// maxPages bounds how many pages a list follows, against a server whose
// cursors never end.
const maxPages = 1000

// listAll requests every page of a paginated list.
func listAll[R, T any](c *Client, method mcp.MCPMethod, page func(*R) ([]T, mcp.Cursor)) ([]T, error) {
	c.t.Helper()
	var all []T
	var cursor mcp.Cursor
	for range maxPages {
		var params any
		if cursor != "" {
			params = mcp.PaginatedParams{Cursor: cursor}
		}
		raw, werr := c.call(string(method), params)
		if werr != nil {
			return nil, werr
		}
		var res R
		if err := json.Unmarshal(raw, &res); err != nil {
			c.t.Fatalf("adaptertest: %s: decoding the result: %v", method, err)
		}
		items, next := page(&res)
		all = append(all, items...)
		if next == "" || next == cursor {
			return all, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("adaptertest: %s: more than %d pages", method, maxPages)
}

// CallTool calls the tool name with args (tools/call); args must encode to a
// JSON object, or be nil for none. A command's failure is a result with
// IsError set, as the agent sees it; the error is a *WireError when the
// server answered one (an unknown or ungranted tool, for one).
func (c *Client) CallTool(name string, args any) (*mcp.CallToolResult, error) {
	c.t.Helper()
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	raw, werr := c.call(string(mcp.MethodToolsCall), params)
	if werr != nil {
		return nil, werr
	}
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		c.t.Fatalf("adaptertest: tools/call %s: %v", name, err)
	}
	return res, nil
}

// Complete asks for completions of the variable arg of the resource
// template ref (its URI template, as resources/templates/list gives it,
// such as "app://customers_index{?direction,page,per_page,search,sort}",
// or an expanded URI of it, which the adapter checks as a read would),
// with value typed so far and the values of other variables in context
// (nil for none). The error is a *WireError when the server answered one.
func (c *Client) Complete(ref, arg, value string, context map[string]string) (*mcp.CompleteResult, error) {
	c.t.Helper()
	params := map[string]any{
		"ref":      mcp.ResourceReference{Type: "ref/resource", URI: ref},
		"argument": mcp.CompleteArgument{Name: arg, Value: value},
	}
	if context != nil {
		params["context"] = mcp.CompleteContext{Arguments: context}
	}
	raw, werr := c.call(string(mcp.MethodCompletionComplete), params)
	if werr != nil {
		return nil, werr
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		c.t.Fatalf("adaptertest: completion/complete: decoding the result: %v", err)
	}
	return &res, nil
}
