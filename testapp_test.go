package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/middleware"
)

// The application the edge tests serve: a live command with a required id,
// one with optional enum and integer query variables and a Validate method,
// one that is never granted, and a resource and a template of the user's own.

type edgeShowArgs struct {
	ID int64 `json:"id"`
}

type edgeItem struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type edgeIndexArgs struct {
	Sort    string `json:"sort,omitempty" jsonschema:"enum=name,enum=id"`
	Page    *int   `json:"page,omitempty"`
	PerPage *int   `json:"per_page,omitempty"`
}

// Validate names every field that is wrong, not only the first.
func (a edgeIndexArgs) Validate() error {
	var errs adapter.ValidationError
	if a.Page != nil && *a.Page < 1 {
		errs.Add("page", "must be at least 1")
	}
	if a.PerPage != nil && (*a.PerPage < 1 || *a.PerPage > 100) {
		errs.Add("per_page", "must be between 1 and 100")
	}
	return errs.Err()
}

// Item ids with a behaviour of their own.
const (
	edgeMissingID = 404 // the command answers adapter.ErrNotFound
	edgeNotifyID  = 13  // the command notifies the client, then answers ErrNotFound
)

// edgeApp builds the server and its adapter.
func edgeApp(t testing.TB) (*server.MCPServer, *adapter.Adapter) {
	t.Helper()
	srv := server.NewMCPServer("edge", "1.0.0")
	srv.AddResource(mcp.NewResource("app://readme", "readme", mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "read me"}}, nil
		})
	srv.AddResourceTemplate(mcp.NewResourceTemplate("files://{path}", "files"),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "file " + req.Params.URI}}, nil
		})
	a := adapter.Wrap(srv, adapter.WithGrant(func(_ context.Context, name string) bool {
		return name != "items_secret"
	}))
	adapter.Live(a, "items_show", "One item.", func(ctx context.Context, args edgeShowArgs) (edgeItem, error) {
		switch args.ID {
		case edgeNotifyID:
			// A notification during the request turns mcp-go's answer
			// into an event stream.
			err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
				map[string]any{"progressToken": "edge", "progress": 1})
			if err != nil {
				return edgeItem{}, err
			}
			return edgeItem{}, fmt.Errorf("item %d: %w", args.ID, adapter.ErrNotFound)
		case edgeMissingID:
			return edgeItem{}, fmt.Errorf("item %d: %w", args.ID, adapter.ErrNotFound)
		}
		return edgeItem{ID: args.ID, Name: fmt.Sprintf("item %d", args.ID)}, nil
	})
	adapter.Live(a, "items_index", "A page of items.", func(_ context.Context, args edgeIndexArgs) ([]edgeItem, error) {
		return []edgeItem{{ID: 1, Name: "item 1"}}, nil
	})
	adapter.Live(a, "items_secret", "Never granted.", func(_ context.Context, args edgeShowArgs) (edgeItem, error) {
		return edgeItem{ID: args.ID}, nil
	})
	adapter.Live(a, "whoami", "The client's address, as the rate limit sees it.", func(ctx context.Context, _ struct{}) (string, error) {
		addr, _ := middleware.RemoteAddrFrom(ctx)
		return addr, nil
	})
	return srv, a
}

// edgeEra is one protocol era the edges are tested on.
type edgeEra struct {
	name     string
	version  string
	notFound int // the code of resource-not-found
}

var edgeEras = []edgeEra{
	{"modern", mcp.ProtocolVersion20260728, mcp.INVALID_PARAMS},
	{"legacy", mcp.ProtocolVersion20251125, mcp.RESOURCE_NOT_FOUND},
}

func (e edgeEra) modern() bool { return e.version == mcp.ProtocolVersion20260728 }

// edgeWireError is a JSON-RPC error object as it came off the wire.
type edgeWireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// edgeCase is a read and the error it must answer on every edge.
type edgeCase struct {
	name string
	uri  string
	// check inspects the error; nil means the read must succeed.
	check func(t *testing.T, era edgeEra, e *edgeWireError)
}

// edgeNotFound expects resource-not-found for uri, with message exactly
// "resource not found: <uri>" unless detail is true (a malformed URI says what
// is wrong after it).
func edgeNotFound(uri string, detail bool) func(*testing.T, edgeEra, *edgeWireError) {
	return func(t *testing.T, era edgeEra, e *edgeWireError) {
		t.Helper()
		if e == nil {
			t.Fatalf("read %s succeeded, want resource not found", uri)
		}
		if e.Code != era.notFound {
			t.Errorf("code = %d, want %d", e.Code, era.notFound)
		}
		want := "resource not found: " + uri
		if detail && !strings.HasPrefix(e.Message, want+": ") || !detail && e.Message != want {
			t.Errorf("message = %q, want %q", e.Message, want)
		}
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil || len(data) != 1 || data["uri"] != uri {
			t.Errorf("data = %s, want {\"uri\":%q}", e.Data, uri)
		}
	}
}

// edgeInvalid expects -32602 with data.errors naming exactly fields, in
// order; messages, when given, must match too.
func edgeInvalid(fields []string, messages ...string) func(*testing.T, edgeEra, *edgeWireError) {
	return func(t *testing.T, _ edgeEra, e *edgeWireError) {
		t.Helper()
		if e == nil {
			t.Fatal("read succeeded, want -32602")
		}
		if e.Code != mcp.INVALID_PARAMS {
			t.Errorf("code = %d, want -32602", e.Code)
		}
		var data struct {
			Errors []adapter.FieldError `json:"errors"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatalf("data = %s: %v", e.Data, err)
		}
		var got, parts []string
		for _, fe := range data.Errors {
			got = append(got, fe.Field)
			parts = append(parts, fe.Field+": "+fe.Message)
		}
		if strings.Join(got, ",") != strings.Join(fields, ",") {
			t.Errorf("fields = %v, want %v (data %s)", got, fields, e.Data)
		}
		for i, m := range messages {
			if i < len(data.Errors) && data.Errors[i].Message != m {
				t.Errorf("errors[%d].message = %q, want %q", i, data.Errors[i].Message, m)
			}
		}
		if want := "invalid arguments: " + strings.Join(parts, "; "); e.Message != want {
			t.Errorf("message = %q, want %q", e.Message, want)
		}
	}
}

// edgeCases are the reads every edge must answer alike.
var edgeCases = []edgeCase{
	{name: "ok", uri: "app://items_show/7"},
	{name: "ok query", uri: "app://items_index?per_page=10&sort=id"},
	{name: "conversion fails", uri: "app://items_index?page=abc&per_page=1.5&sort=bogus",
		check: edgeInvalid([]string{"page", "per_page", "sort"})},
	{name: "validation fails", uri: "app://items_index?page=0&per_page=500",
		check: edgeInvalid([]string{"page", "per_page"}, "must be at least 1", "must be between 1 and 100")},
	{name: "unknown command", uri: "app://items_nope/1", check: edgeNotFound("app://items_nope/1", false)},
	{name: "malformed URI", uri: "app://items_show/1/2", check: edgeNotFound("app://items_show/1/2", true)},
	{name: "unknown query parameter", uri: "app://items_index?color=red", check: edgeNotFound("app://items_index?color=red", true)},
	{name: "ungranted command", uri: "app://items_secret/1", check: edgeNotFound("app://items_secret/1", false)},
	{name: "command answers ErrNotFound", uri: "app://items_show/404", check: edgeNotFound("app://items_show/404", false)},
	{name: "event stream", uri: "app://items_show/13", check: edgeNotFound("app://items_show/13", false)},
}

// edgeCheckResult checks a successful read's result.
func edgeCheckResult(t *testing.T, uri string, result json.RawMessage) {
	t.Helper()
	var res struct {
		Contents []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		t.Fatalf("result %s: %v", result, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("result = %s, want one application/json content for %s", result, uri)
	}
	if !json.Valid([]byte(res.Contents[0].Text)) {
		t.Errorf("text = %q, want JSON", res.Contents[0].Text)
	}
}

// edgeRun checks one case against what a transport answered.
func edgeRun(t *testing.T, era edgeEra, c edgeCase, result json.RawMessage, e *edgeWireError) {
	t.Helper()
	if c.check == nil {
		if e != nil {
			t.Fatalf("read %s: %+v", c.uri, e)
		}
		edgeCheckResult(t, c.uri, result)
		return
	}
	c.check(t, era, e)
}

// edgeIndistinguishable checks that the errors for an ungranted command and
// for one that does not exist differ only by the URI.
func edgeIndistinguishable(t *testing.T, ungranted, ungrantedURI string, missing, missingURI string) {
	t.Helper()
	if a, b := strings.ReplaceAll(ungranted, ungrantedURI, "URI"), strings.ReplaceAll(missing, missingURI, "URI"); a != b {
		t.Errorf("an ungranted command is told apart from a missing one:\n%s\n%s", a, b)
	}
}

// edgeRequestParams is the params object of a request, with the protocol
// _meta of a modern request.
func edgeRequestParams(era edgeEra, params map[string]any) map[string]any {
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	if era.modern() {
		p["_meta"] = map[string]any{
			mcp.MetaKeyProtocolVersion:    era.version,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "edge-test", "version": "1"},
		}
	}
	return p
}

// edgeInitializeParams are the params of a legacy initialize.
func edgeInitializeParams(era edgeEra) map[string]any {
	return map[string]any{
		"protocolVersion": era.version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "edge-test", "version": "1"},
	}
}

// edgeResponse is one JSON-RPC response.
type edgeResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *edgeWireError  `json:"error"`
}

var errEdgeNoResponse = errors.New("no response")
