package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// report is a result whose JSON has every kind of null Go writes: a nil
// slice, pointer and map, and a nil slice inside a list item.
type report struct {
	Title   string            `json:"title" jsonschema:"minLength=1"`
	Lines   []reportLine      `json:"lines"`
	Owner   *reportLine       `json:"owner"`
	Labels  map[string]string `json:"labels"`
	Created time.Time         `json:"created"`
	Status  string            `json:"status" jsonschema:"enum=open,enum=closed"`
	Note    *string           `json:"note,omitempty"`
}

type reportLine struct {
	Text string   `json:"text"`
	Tags []string `json:"tags"`
}

type noArgs struct{}

// toolsAdapter declares commands of each shape of result, on a server that
// checks structured results against their output schema.
func toolsAdapter() *adapter.Adapter {
	srv := server.NewMCPServer("tools", "1", server.WithOutputSchemaValidation())
	a := adapter.Wrap(srv)
	adapter.Live(a, "report_show", "A report.", func(context.Context, noArgs) (report, error) {
		return report{Title: "r", Lines: []reportLine{{Text: "a"}}, Created: time.Unix(0, 0).UTC(), Status: "open"}, nil
	}, adapter.WithTitle("Show a report"))
	adapter.Live(a, "report_list", "Reports.", func(context.Context, noArgs) ([]report, error) {
		return nil, nil
	})
	adapter.Live(a, "report_text", "A report, as text only.", func(context.Context, noArgs) (report, error) {
		return report{Title: "r"}, nil
	}, adapter.WithoutStructuredOutput())
	adapter.Command(a, "report_create", "Writes a report.", func(context.Context, noArgs) (*report, error) {
		return nil, nil
	})
	return a
}

// listedTool is a tool as tools/list puts it on the wire.
type listedTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  struct {
		ReadOnlyHint   *bool `json:"readOnlyHint"`
		IdempotentHint *bool `json:"idempotentHint"`
	} `json:"annotations"`
}

func listTools(t *testing.T, c *adaptertest.Client) map[string]listedTool {
	t.Helper()
	raw, err := c.Call("tools/list", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Tools []listedTool }
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	tools := map[string]listedTool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	return tools
}

func TestToolsPublishOutputSchemaTitleAndHints(t *testing.T) {
	for _, opts := range [][]adaptertest.Option{nil, {adaptertest.Legacy()}} {
		c := adaptertest.New(t, toolsAdapter(), opts...)
		t.Run(c.Version(), func(t *testing.T) {
			tools := listTools(t, c)
			show := tools["report_show"]
			if show.Title != "Show a report" {
				t.Errorf("title %q", show.Title)
			}
			if !strings.Contains(string(show.OutputSchema), `"type":"object"`) {
				t.Errorf("report_show outputSchema %s, want the object schema of report", show.OutputSchema)
			}
			for name, want := range map[string]bool{"report_show": true, "report_list": true, "report_create": false} {
				h := tools[name].Annotations
				if h.ReadOnlyHint == nil || *h.ReadOnlyHint != want || h.IdempotentHint == nil || *h.IdempotentHint != want {
					t.Errorf("%s: readOnlyHint %v, idempotentHint %v, want both %v", name, h.ReadOnlyHint, h.IdempotentHint, want)
				}
			}
			// A list is no object: MCP has no outputSchema for it. A
			// pointer may be nil, which is no object either. Text only has
			// none.
			for name, want := range map[string]bool{"report_list": false, "report_create": false, "report_text": false} {
				if got := tools[name].OutputSchema != nil; got != want {
					t.Errorf("%s: outputSchema %s, want one: %v", name, tools[name].OutputSchema, want)
				}
			}

			res, err := c.CallTool("report_show", nil)
			if err != nil || res.IsError {
				// mcp-go replaces a result that breaks the schema with an error.
				t.Fatalf("report_show: %v %+v", err, res)
			}
			checkConforms(t, show.OutputSchema, res.StructuredContent)
			text := res.Content[0].(mcp.TextContent).Text
			if b, _ := json.Marshal(res.StructuredContent); !jsonEqual(t, b, []byte(text)) {
				t.Errorf("structuredContent %s and text %s differ", b, text)
			}

			res, err = c.CallTool("report_text", nil)
			if err != nil || res.IsError || res.StructuredContent != nil || len(res.Content) != 1 {
				t.Errorf("report_text: %v %+v, want text only", err, res)
			}
			res, err = c.CallTool("report_create", nil)
			if err != nil || res.IsError || res.StructuredContent != nil {
				t.Errorf("report_create with a nil result: %v %+v, want null as text only", err, res)
			}
		})
	}
}

// checkConforms validates v against schema, both as the client received
// them.
func checkConforms(t *testing.T, schema json.RawMessage, v any) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.AssertFormat()
	if err := comp.AddResource("urn:test:out", doc); err != nil {
		t.Fatal(err)
	}
	s, err := comp.Compile("urn:test:out")
	if err != nil {
		t.Fatalf("the output schema does not compile: %v\n%s", err, schema)
	}
	b, _ := json.Marshal(v)
	inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s does not conform to the output schema: %v", b, err)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestTitleOnResourceAndTemplate(t *testing.T) {
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "items_index", "Items.", func(context.Context, struct {
		Page int `json:"page,omitempty"`
	}) ([]int, error) {
		return nil, nil
	}, adapter.WithTitle("Items"))
	c := adaptertest.New(t, a)
	templates, err := c.ListTemplates()
	if err != nil || len(templates) != 1 || templates[0].Title != "Items" {
		t.Errorf("templates %+v, %v; want the title", templates, err)
	}
	resources, err := c.ListResources()
	if err != nil || len(resources) != 1 || resources[0].Title != "Items" {
		t.Errorf("resources %+v, %v; want the title", resources, err)
	}
}

// tree contains itself: invopop cannot spell its schema out in place.
type tree struct {
	Name     string `json:"name"`
	Children []tree `json:"children"`
	Parent   *tree  `json:"parent,omitempty"`
}

func TestRecursiveTypesDeclare(t *testing.T) {
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "tree_show", "A tree.", func(_ context.Context, args tree) (tree, error) {
		return tree{Name: args.Name, Children: []tree{{Name: "leaf"}}}, nil
	})
	c := adaptertest.New(t, a)
	tools := listTools(t, c)
	if !strings.Contains(string(tools["tree_show"].OutputSchema), "$ref") {
		t.Errorf("outputSchema %s, want references for a recursive type", tools["tree_show"].OutputSchema)
	}
	res, err := c.CallTool("tree_show", map[string]any{"name": "root", "children": []any{map[string]any{"name": 1, "children": []any{}}}})
	if err != nil || !res.IsError || res.Content[0].(mcp.TextContent).Text != "invalid arguments: children: item 0/name must be a string" {
		t.Errorf("a bad name deep in the tree: %v %+v", err, res)
	}
	res, err = c.CallTool("tree_show", map[string]any{"name": "root", "children": []any{}})
	if err != nil || res.IsError {
		t.Fatalf("tree_show: %v %+v", err, res)
	}
	checkConforms(t, tools["tree_show"].OutputSchema, res.StructuredContent)
}

func TestSchemaThatDoesNotCompilePanics(t *testing.T) {
	type args struct {
		// Go's regexp has no lookahead.
		Code string `json:"code" jsonschema:"pattern=^(?=a)"`
	}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, `command "bad": input schema`) {
			t.Errorf("panic %q, want one naming the command and its input schema", msg)
		}
	}()
	a := adapter.Wrap(server.NewMCPServer("t", "1"))
	adapter.Live(a, "bad", "", func(context.Context, args) (string, error) { return "", nil })
}

// TestInspectReportIsTheCallers: a report is the caller's to change. Its
// InputSchema must not be the bytes tools/list publishes, which are those
// arguments are checked against: rewriting the report's (here into a
// valid "{}") must change neither what tools/list says nor the next report.
func TestInspectReportIsTheCallers(t *testing.T) {
	a := toolsAdapter()
	c := adaptertest.New(t, a)
	want := listTools(t, c)["report_show"].InputSchema
	before := a.Inspect()
	for _, cr := range before.Commands {
		s := cr.InputSchema
		copy(s, "{}")
		for i := 2; i < len(s); i++ {
			s[i] = ' '
		}
	}
	if got := listTools(t, c)["report_show"].InputSchema; string(got) != string(want) {
		t.Errorf("tools/list publishes %s after a report was changed, want %s", got, want)
	}
	for _, cr := range a.Inspect().Commands {
		if cr.Name == "report_show" && !strings.Contains(string(cr.InputSchema), `"type"`) {
			t.Errorf("the next report's schema is %q", cr.InputSchema)
		}
	}
}
