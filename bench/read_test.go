package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

type showArgs struct {
	ID int64 `json:"id"`
}

type item struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// show is the trivial command every read benchmark runs: the cost left is
// the path's own.
func show(_ context.Context, args showArgs) (item, error) {
	return item{ID: args.ID, Name: "Ada Lovelace"}, nil
}

func connect(b *testing.B, srv *server.MCPServer) *client.Client {
	b.Helper()
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	return c
}

// adapterServer declares n live commands: items_show and n-1 others, on an
// adapter with opts.
func adapterServer(n int, opts ...adapter.Option) *server.MCPServer {
	srv := server.NewMCPServer("bench", "1")
	a := adapter.Wrap(srv, opts...)
	adapter.Live(a, "items_show", "One item.", show)
	for i := 1; i < n; i++ {
		adapter.Live(a, "items_show_"+strconv.Itoa(i), "Another.", show)
	}
	return srv
}

// nativeServer serves the same reads with plain mcp-go templates whose
// handler does the command's work from Params.Arguments: mcp-go's own,
// lenient path.
func nativeServer(n int) *server.MCPServer {
	srv := server.NewMCPServer("bench", "1", server.WithResourceCapabilities(true, false))
	handler := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		raw := fmt.Sprint(firstOf(req.Params.Arguments["id"]))
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, err
		}
		res, err := show(ctx, showArgs{ID: id})
		if err != nil {
			return nil, err
		}
		text, err := jsonText(res)
		if err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: text}}, nil
	}
	srv.AddResourceTemplate(mcp.NewResourceTemplate("app://items_show/{id}", "items_show"), handler)
	for i := 1; i < n; i++ {
		name := "items_show_" + strconv.Itoa(i)
		srv.AddResourceTemplate(mcp.NewResourceTemplate("app://"+name+"/{id}", name), handler)
	}
	return srv
}

// firstOf unwraps mcp-go's matched values, which come as []string.
func firstOf(v any) any {
	if s, ok := v.([]string); ok && len(s) > 0 {
		return s[0]
	}
	return v
}

func benchRead(b *testing.B, srv *server.MCPServer) { benchReadQuery(b, srv, "") }

// benchReadQuery reads app://items_show/{1..64} with query appended.
func benchReadQuery(b *testing.B, srv *server.MCPServer, query string) {
	c := connect(b, srv)
	ctx := context.Background()
	uris := make([]string, 64)
	for i := range uris {
		uris[i] = "app://items_show/" + strconv.Itoa(i+1) + query
	}
	req := mcp.ReadResourceRequest{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.Params.URI = uris[i%len(uris)]
		res, err := c.ReadResource(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Contents) != 1 {
			b.Fatalf("%d contents", len(res.Contents))
		}
	}
}

// checkedArgs are arguments whose schema has a keyword of each kind the
// adapter enforces on a read: bounds, a length, a pattern, an enum, a format.
type checkedArgs struct {
	ID      int64  `json:"id" jsonschema:"minimum=1"`
	Page    *int   `json:"page,omitempty" jsonschema:"minimum=1"`
	PerPage *int   `json:"per_page,omitempty" jsonschema:"minimum=1,maximum=100"`
	Search  string `json:"search,omitempty" jsonschema:"maxLength=200,pattern=^[a-z ]*$"`
	Sort    string `json:"sort,omitempty" jsonschema:"enum=name,enum=created_at"`
	Day     string `json:"day,omitempty" jsonschema:"format=date"`
}

// BenchmarkReadAdapterChecked is ReadAdapter with five more query variables,
// each held to its schema on every read: what validation adds to a read.
// The native template it compares with checks nothing.
func BenchmarkReadAdapterChecked(b *testing.B) {
	srv := server.NewMCPServer("bench", "1")
	a := adapter.Wrap(srv)
	adapter.Live(a, "items_show", "One item.", func(ctx context.Context, args checkedArgs) (item, error) {
		return show(ctx, showArgs{ID: args.ID})
	})
	benchReadQuery(b, srv, "?day=2024-05-31&page=2&per_page=50&search=ada%20lovelace&sort=name")
}

func BenchmarkReadAdapter(b *testing.B)        { benchRead(b, adapterServer(1)) }
func BenchmarkReadNativeTemplate(b *testing.B) { benchRead(b, nativeServer(1)) }
func BenchmarkReadAdapter1000(b *testing.B)    { benchRead(b, adapterServer(1000)) }
func BenchmarkReadNative1000(b *testing.B)     { benchRead(b, nativeServer(1000)) }

func BenchmarkToolCall(b *testing.B) {
	c := connect(b, adapterServer(1))
	ctx := context.Background()
	req := mcp.CallToolRequest{}
	req.Params.Name = "items_show"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.Params.Arguments = map[string]any{"id": i%64 + 1}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
