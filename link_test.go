package adapter_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// linkArgs has a variable of every kind: two in the path, the rest in the
// query, two of them flattened from filter.
type linkArgs struct {
	ID     int64        `json:"id"`
	Name   string       `json:"name"`
	Score  *float64     `json:"score,omitempty"`
	Exact  *json.Number `json:"exact,omitempty"`
	Flag   *bool        `json:"flag,omitempty"`
	Level  string       `json:"level,omitempty" jsonschema:"enum=low,enum=high"`
	Limit  *int         `json:"limit,omitempty" jsonschema:"nullable"`
	Note   *string      `json:"note,omitempty" jsonschema:"nullable"`
	Filter *linkFilter  `json:"filter,omitempty"`
	Whole  float64      `json:"whole,omitempty" jsonschema:"type=integer"`
}

type linkFilter struct {
	Min *int   `json:"min,omitempty"`
	Tag string `json:"tag,omitempty"`
}

type linkList struct {
	IDs []int `json:"ids"`
}

type linkNone struct {
	Search string `json:"search,omitempty"`
}

// linkApp declares link_show, which answers its arguments, beside
// commands that get no link.
func linkApp(t *testing.T) *adapter.Adapter {
	t.Helper()
	a := adapter.Wrap(server.NewMCPServer("link-test", "1"))
	adapter.Live(a, "link_show", "Its arguments.", func(_ context.Context, args linkArgs) (linkArgs, error) {
		if args.Name == "missing" {
			return linkArgs{}, adapter.ErrNotFound
		}
		return args, nil
	}, adapter.WithTitle("Show a link"))
	adapter.Live(a, "link_index", "Everything.", func(_ context.Context, args linkNone) (linkNone, error) { return args, nil })
	adapter.Live(a, "link_text", "Text only.", func(_ context.Context, args linkNone) (linkNone, error) { return args, nil },
		adapter.WithoutStructuredOutput())
	adapter.Live(a, "link_list", "A list has no template.", func(_ context.Context, args linkList) (linkList, error) { return args, nil })
	adapter.Live(a, "link_confirm", "Confirmed.", func(_ context.Context, args linkNone) (linkNone, error) { return args, nil },
		adapter.NeedsConfirmation())
	adapter.Command(a, "link_write", "Writes.", func(_ context.Context, args linkNone) (linkNone, error) { return args, nil })
	return a
}

// links returns the resource_link contents of a result.
func links(res *mcp.CallToolResult) []mcp.ResourceLink {
	var out []mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(mcp.ResourceLink); ok {
			out = append(out, l)
		}
	}
	return out
}

// A tools/call of a live command with a template answers, beside its text
// and structuredContent, a resource_link to the canonical expanded URI of
// its arguments, on both eras; reading the link answers what the call
// did, and a listen acknowledges it. Arguments a URI cannot carry get no
// link.
func TestToolResultLinksItsURI(t *testing.T) {
	cases := []struct {
		name, args, want string
	}{
		{"path", `{"id":12,"name":"ada"}`, "app://link_show/12/ada"},
		{"percent-encoded", `{"id":12,"name":"a/b %&=+?#~-._é😀\u2028"}`,
			"app://link_show/12/a%2Fb%20%25%26%3D%2B%3F%23~-._%C3%A9%F0%9F%98%80%E2%80%A8"},
		{"a percent sign that looks encoded", `{"id":1,"name":"%41"}`, "app://link_show/1/%2541"},
		{"dots", `{"id":1,"name":".."}`, "app://link_show/1/.."},
		{"query in name order", `{"id":1,"name":"x","level":"high","flag":false,"score":2.5}`, "app://link_show/1/x?flag=false&level=high&score=2.5"},
		{"a number's canonical form", `{"id":1,"name":"x","score":1.50}`, "app://link_show/1/x?score=1.5"},
		{"a whole number written as a float", `{"id":1,"name":"x","whole":2.0}`, "app://link_show/1/x?whole=2"},
		{"a whole number with an exponent", `{"id":1,"name":"x","whole":1e1}`, "app://link_show/1/x?whole=10"},
		{"a json.Number as written", `{"id":1,"name":"x","exact":1.50}`, "app://link_show/1/x?exact=1.50"},
		{"null", `{"id":1,"name":"x","limit":null}`, "app://link_show/1/x?limit=null"},
		{"a string that looks like null", `{"id":1,"name":"x","note":"null"}`, "app://link_show/1/x?note=null"},
		{"an empty query value", `{"id":1,"name":"x","note":""}`, "app://link_show/1/x?note="},
		{"flattened", `{"id":1,"name":"x","filter":{"min":2,"tag":"a&b"}}`, "app://link_show/1/x?min=2&tag=a%26b"},
		{"no arguments", `{}`, ""}, // an error: id and name are required
		{"all optional, none given", ``, ""},
		// No URI spells these.
		{"an empty path segment", `{"id":1,"name":""}`, ""},
		{"null for a string", `{"id":1,"name":"x","note":null}`, ""},
		{"an empty struct, not an absent one", `{"id":1,"name":"x","filter":{}}`, ""},
		// A failure links nothing.
		{"an error", `{"id":1,"name":"missing"}`, ""},
	}
	for _, era := range []struct {
		name string
		opts []adaptertest.Option
	}{{"modern", nil}, {"legacy", []adaptertest.Option{adaptertest.Legacy()}}} {
		t.Run(era.name, func(t *testing.T) {
			a := linkApp(t)
			c := adaptertest.New(t, a, era.opts...)
			for _, tc := range cases {
				var args any
				if tc.args != "" {
					args = json.RawMessage(tc.args)
				}
				tool := "link_show"
				if tc.args == "" {
					tool = "link_index"
				}
				res, err := c.CallTool(tool, args)
				if err != nil {
					t.Fatalf("%s: tools/call %s: %v", tc.name, tc.args, err)
				}
				got := links(res)
				if tc.want == "" && tool == "link_show" {
					if len(got) != 0 {
						t.Errorf("%s: %s linked %+v, want no link", tc.name, tc.args, got)
					}
					continue
				}
				want := tc.want
				if tool == "link_index" {
					want = "app://link_index"
				}
				if len(got) != 1 || got[0].URI != want {
					t.Errorf("%s: %s linked %+v, want %s", tc.name, tc.args, got, want)
					continue
				}
				l := got[0]
				if l.Name != tool || l.MIMEType != "application/json" || l.Description == "" || tool == "link_show" && l.Title != "Show a link" {
					t.Errorf("%s: link %+v, want the command's name and title, a description and application/json", tc.name, l)
				}
				if res.StructuredContent == nil || len(res.Content) != 2 {
					t.Errorf("%s: result %+v, want text, the link and structuredContent", tc.name, res)
				}
				text := res.Content[0].(mcp.TextContent).Text
				read, err := c.Read(l.URI)
				if err != nil || read != text {
					t.Errorf("%s: read %s: %s (%v), want what the call answered: %s", tc.name, l.URI, read, err, text)
				}
			}
		})
	}
}

// The link is one a subscription takes: a listen acknowledges it.
func TestToolResultLinkCanBeWatched(t *testing.T) {
	a := linkApp(t)
	c := adaptertest.New(t, a)
	res, err := c.CallTool("link_show", map[string]any{"id": 3, "name": "é/x", "filter": map[string]any{"tag": "t"}})
	if err != nil || len(links(res)) != 1 {
		t.Fatalf("tools/call: %+v, %v", res, err)
	}
	uri := links(res)[0].URI
	sub, err := c.Listen(uri)
	if err != nil {
		t.Fatalf("listen %s: %v", uri, err)
	}
	defer sub.Close()
	if !slices.Contains(sub.Acknowledged, uri) {
		t.Errorf("listen did not acknowledge %s", uri)
	}
}

// Commands a read or a subscription cannot reach get no link, nor does a
// command that answers JSON text only.
func TestToolResultNoLink(t *testing.T) {
	a := linkApp(t)
	c := adaptertest.New(t, a)
	for _, call := range []struct {
		tool string
		args any
	}{
		{"link_list", map[string]any{"ids": []int{1, 2}}},
		{"link_confirm", nil},
		{"link_write", nil},
		{"link_text", nil},
	} {
		res, err := c.CallTool(call.tool, call.args)
		if err != nil || res.IsError {
			t.Fatalf("tools/call %s: %+v, %v", call.tool, res, err)
		}
		if len(res.Content) != 1 || len(links(res)) != 0 {
			t.Errorf("tools/call %s: content %+v, want the text only", call.tool, res.Content)
		}
	}
}

// A client of a protocol before 2025-06-18, which has no resource_link
// content, gets none.
func TestToolResultNoLinkBefore20250618(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20250326, mcp.ProtocolVersion20250618} {
		t.Run(version, func(t *testing.T) {
			a := linkApp(t)
			cl, err := client.NewInProcessClientWithOptions(a.Server(), client.WithProtocolVersion(version))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = version
			init.Params.ClientInfo = mcp.Implementation{Name: "old", Version: "1"}
			got, err := cl.Initialize(t.Context(), init)
			if err != nil || got.ProtocolVersion != version {
				t.Fatalf("initialize: %+v, %v", got, err)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "link_show"
			req.Params.Arguments = map[string]any{"id": 1, "name": "x"}
			res, err := cl.CallTool(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			wantLinks := 0
			if version >= mcp.ProtocolVersion20250618 {
				wantLinks = 1
			}
			if n := len(links(res)); n != wantLinks {
				t.Errorf("on %s: %d links, want %d", version, n, wantLinks)
			}
		})
	}
}
