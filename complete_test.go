package adapter_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

type completeArgs struct {
	Sort    string `json:"sort,omitempty" jsonschema:"enum=name,enum=created_at"`
	Dir     string `json:"direction,omitempty" jsonschema:"enum=asc,enum=desc"`
	Active  *bool  `json:"active,omitempty"`
	Search  string `json:"search,omitempty"`
	Country string `json:"country,omitempty"`
	Page    int    `json:"page,omitempty"`
	Many    string `json:"many,omitempty"`
}

type userProvider struct{}

func (userProvider) CompleteResourceArgument(_ context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{"user:" + uri + ":" + arg.Name}}, nil
}

func completionServer(t *testing.T, opts ...adapter.Option) *server.MCPServer {
	srv := server.NewMCPServer("test", "1")
	a := adapter.Wrap(srv, opts...)
	var seen map[string]any
	adapter.Live(a, "customers_index", "", func(context.Context, completeArgs) (int, error) { return 0, nil },
		adapter.CompleteWith("country", func(_ context.Context, prefix string, args map[string]any) ([]string, error) {
			seen = args
			return []string{prefix + "land", fmt.Sprintf("page=%v(%T) sort=%v search=%v", args["page"], args["page"], args["sort"], args["search"])}, nil
		}),
		adapter.CompleteWith("many", func(context.Context, string, map[string]any) ([]string, error) {
			out := make([]string, 250)
			for i := range out {
				out[i] = fmt.Sprint(i)
			}
			return out, nil
		}))
	_ = seen
	return srv
}

func complete(t *testing.T, c *client.Client, ref, name, value string, given map[string]string) (*mcp.CompleteResult, error) {
	t.Helper()
	req := mcp.CompleteRequest{}
	req.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: ref}
	req.Params.Argument = mcp.CompleteArgument{Name: name, Value: value}
	req.Params.Context = mcp.CompleteContext{Arguments: given}
	return c.Complete(context.Background(), req)
}

func TestCompletion(t *testing.T) {
	const tmpl = "app://customers_index{?active,country,direction,many,page,search,sort}"
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			c := connect(t, completionServer(t, adapter.WithCompletionFallback(userProvider{})), era.options...)
			if caps := c.GetServerCapabilities(); caps.Completions == nil {
				t.Error("the completions capability is not declared")
			}
			cases := []struct {
				ref, name, value string
				given            map[string]string
				want             []string
			}{
				{tmpl, "direction", "", nil, []string{"asc", "desc"}},
				{tmpl, "direction", "d", nil, []string{"desc"}},
				{tmpl, "direction", "D", nil, []string{"desc"}},
				{tmpl, "sort", "cr", nil, []string{"created_at"}},
				{tmpl, "sort", "x", nil, []string{}},
				{tmpl, "active", "", nil, []string{"true", "false"}},
				{tmpl, "active", "f", nil, []string{"false"}},
				{tmpl, "search", "ad", nil, []string{}},
				{tmpl, "page", "1", nil, []string{}},
				// an expanded URI of the template works as the reference too
				{"app://customers_index?sort=name", "direction", "a", nil, []string{"asc"}},
				// an application completer gets the typed arguments
				{tmpl, "country", "ice", map[string]string{"page": "2", "sort": "name", "search": "ada"},
					[]string{"iceland", "page=2(int64) sort=name search=ada"}},
				{tmpl, "country", "x", map[string]string{"page": "two"},
					[]string{"xland", "page=two(string) sort=<nil> search=<nil>"}},
				// a reference the adapter does not own goes to the fallback
				{"app://user_template/{x}", "x", "", nil, []string{"user:app://user_template/{x}:x"}},
			}
			for _, tc := range cases {
				res, err := complete(t, c, tc.ref, tc.name, tc.value, tc.given)
				if err != nil {
					t.Errorf("complete %s %s=%q: %v", tc.ref, tc.name, tc.value, err)
					continue
				}
				if !slices.Equal(res.Completion.Values, tc.want) {
					t.Errorf("complete %s %s=%q = %q, want %q", tc.ref, tc.name, tc.value, res.Completion.Values, tc.want)
				}
			}
			res, err := complete(t, c, tmpl, "many", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Completion.Values) != 100 || res.Completion.Total != 250 || !res.Completion.HasMore {
				t.Errorf("250 candidates: got %d values, total %d, hasMore %v; want 100, 250, true",
					len(res.Completion.Values), res.Completion.Total, res.Completion.HasMore)
			}
			if _, err := complete(t, c, tmpl, "nope", "", nil); err == nil {
				t.Error("completing a variable the template lacks: want an error")
			}
		})
	}
}

func TestCompletionOfUngrantedCommandLooksAbsent(t *testing.T) {
	srv := completionServer(t, adapter.WithGrant(func(context.Context, string) bool { return false }))
	c := connect(t, srv)
	for _, ref := range []string{"app://customers_index{?active,country,direction,many,page,search,sort}", "app://nobody{?x}"} {
		res, err := complete(t, c, ref, "direction", "", nil)
		if err != nil || len(res.Completion.Values) != 0 {
			t.Errorf("complete %s: %v %+v, want no values and no error", ref, err, res)
		}
	}
}
