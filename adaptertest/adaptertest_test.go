package adaptertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

type showArgs struct {
	ID int64 `json:"id"`
}

type listArgs struct {
	Sort    string `json:"sort,omitempty" jsonschema:"enum=name,enum=newest"`
	PerPage *int   `json:"per_page,omitempty"`
}

func (a listArgs) Validate() error {
	if a.PerPage != nil && (*a.PerPage < 1 || *a.PerPage > 100) {
		return &adapter.ValidationError{Errors: []adapter.FieldError{{Field: "per_page", Message: "must be between 1 and 100"}}}
	}
	return nil
}

type item struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type subjectKey struct{}

// app is a server with two live commands and one only admins are granted.
func app(t *testing.T) *adapter.Adapter {
	t.Helper()
	a := adapter.Wrap(server.NewMCPServer("test", "1"), adapter.WithGrant(func(ctx context.Context, name string) bool {
		return name != "items_admin" || ctx.Value(subjectKey{}) == "admin"
	}))
	adapter.Live(a, "items_show", "One item.", func(_ context.Context, args showArgs) (item, error) {
		if args.ID > 10 {
			return item{}, fmt.Errorf("item %d: %w", args.ID, adapter.ErrNotFound)
		}
		return item{ID: args.ID, Name: fmt.Sprint("item ", args.ID)}, nil
	})
	adapter.Live(a, "items_index", "Items.", func(context.Context, listArgs) ([]item, error) {
		return []item{{ID: 1, Name: "item 1"}}, nil
	})
	adapter.Live(a, "items_admin", "Admins only.", func(_ context.Context, args showArgs) (item, error) {
		return item{ID: args.ID, Name: "secret"}, nil
	})
	return a
}

// eras are the client options of each protocol era and its not-found code.
var eras = []struct {
	name     string
	opts     []adaptertest.Option
	notFound int
}{
	{"modern", nil, mcp.INVALID_PARAMS},
	{"legacy", []adaptertest.Option{adaptertest.Legacy()}, mcp.RESOURCE_NOT_FOUND},
}

func TestReadOnBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			c := adaptertest.New(t, app(t), era.opts...)
			text, err := c.Read("app://items_show/3")
			if err != nil || text != `{"id":3,"name":"item 3"}` {
				t.Errorf("Read = %q, %v", text, err)
			}
			res, werr := c.ReadRaw("app://items_index?sort=newest")
			if werr != nil {
				t.Fatal(werr)
			}
			tc, ok := res.Contents[0].(mcp.TextResourceContents)
			if len(res.Contents) != 1 || !ok || tc.URI != "app://items_index?sort=newest" || tc.MIMEType != "application/json" {
				t.Errorf("ReadRaw = %+v", res)
			}
		})
	}
}

func TestReadErrorsAreTheWireErrors(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			c := adaptertest.New(t, app(t), era.opts...)

			_, werr := c.ReadRaw("app://items_index?per_page=500&sort=oldest")
			if werr == nil || werr.Code != mcp.INVALID_PARAMS {
				t.Fatalf("ReadRaw = %v, want -32602", werr)
			}
			// The enum's failure, and what Validate says of per_page, which
			// converted: every bad field in one answer.
			if fields := werr.FieldErrors(); len(fields) != 2 || fields[0].Field != "sort" || fields[1].Field != "per_page" {
				t.Errorf("FieldErrors = %+v, want the enum's, then Validate's", fields)
			}
			_, werr = c.ReadRaw("app://items_index?per_page=500")
			want := adapter.FieldError{Field: "per_page", Message: "must be between 1 and 100"}
			if werr == nil || werr.Message != "invalid arguments: per_page: must be between 1 and 100" ||
				!slices.Equal(werr.FieldErrors(), []adapter.FieldError{want}) {
				t.Errorf("ReadRaw = %v", werr)
			}

			for _, uri := range []string{"app://items_show/11", "app://nope/1", "app://items_admin/1"} {
				_, err := c.Read(uri)
				var werr *adaptertest.WireError
				if !errors.As(err, &werr) || werr.Code != era.notFound || werr.URI() != uri ||
					werr.Message != "resource not found: "+uri {
					t.Errorf("Read(%s) = %v, want resource not found (%d) with data.uri", uri, err, era.notFound)
				}
			}
		})
	}
}

func TestWithContextReachesTheGrant(t *testing.T) {
	a := app(t)
	admin := adaptertest.New(t, a, adaptertest.WithContext(context.WithValue(context.Background(), subjectKey{}, "admin")))
	if text, err := admin.Read("app://items_admin/1"); err != nil || text != `{"id":1,"name":"secret"}` {
		t.Errorf("admin Read = %q, %v", text, err)
	}
	templates, err := admin.ListTemplates()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tm := range templates {
		names = append(names, tm.Name+" "+tm.URITemplate.Raw())
	}
	want := []string{
		"items_admin app://items_admin/{id}",
		"items_index app://items_index{?per_page,sort}",
		"items_show app://items_show/{id}",
	}
	if !slices.Equal(names, want) {
		t.Errorf("admin templates = %q, want %q", names, want)
	}

	anyone := adaptertest.New(t, a, adaptertest.Legacy())
	templates, err = anyone.ListTemplates()
	if err != nil || len(templates) != 2 {
		t.Errorf("templates without a grant = %d, %v; want 2", len(templates), err)
	}
	if _, err := anyone.CallTool("items_admin", map[string]any{"id": 1}); err == nil {
		t.Error("an ungranted tool answered")
	}
}

func TestToolsResourcesAndCompletion(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			c := adaptertest.New(t, app(t), era.opts...)
			res, err := c.CallTool("items_show", map[string]any{"id": 2})
			if err != nil || res.IsError {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			if text := res.Content[0].(mcp.TextContent).Text; text != `{"id":2,"name":"item 2"}` {
				t.Errorf("CallTool text = %s", text)
			}
			res, err = c.CallTool("items_show", map[string]any{"id": "two"})
			if err != nil || !res.IsError {
				t.Errorf("CallTool with a bad id = %+v, %v; want an isError result", res, err)
			}

			tools, err := c.ListTools()
			if err != nil || len(tools) != 2 {
				t.Errorf("ListTools = %d tools, %v; want 2", len(tools), err)
			}
			resources, err := c.ListResources()
			if err != nil || len(resources) != 1 || resources[0].URI != "app://items_index" {
				t.Errorf("ListResources = %+v, %v; want app://items_index", resources, err)
			}

			got, err := c.Complete("app://items_index{?per_page,sort}", "sort", "n", nil)
			if err != nil || !slices.Equal(got.Completion.Values, []string{"name", "newest"}) {
				t.Errorf("Complete = %+v, %v", got, err)
			}

			raw, err := c.Call("resources/templates/list", nil)
			if err != nil || !json.Valid(raw) {
				t.Errorf("Call(resources/templates/list) = %s, %v", raw, err)
			}
			_, err = c.Call("no/such/method", nil)
			var werr *adaptertest.WireError
			if !errors.As(err, &werr) || werr.Code != mcp.METHOD_NOT_FOUND {
				t.Errorf("Call of an unknown method = %v, want -32601", err)
			}
		})
	}
}

// TestCallWithParamsThatEncodeToNull: a nil pointer or map passed as
// params means none, as nil does, and a null _meta none either, on both
// eras. (Both used to panic on 2026-07-28, adding to the nil map that
// null decodes to.)
func TestCallWithParamsThatEncodeToNull(t *testing.T) {
	for _, era := range eras {
		for _, params := range []struct {
			name string
			v    any
		}{
			{"nil", nil},
			{"nil pointer", (*mcp.PaginatedParams)(nil)},
			{"nil map", map[string]any(nil)},
			{"null _meta", map[string]any{"_meta": nil}},
		} {
			t.Run(era.name+"/"+params.name, func(t *testing.T) {
				c := adaptertest.New(t, app(t), era.opts...)
				raw, err := c.Call("tools/list", params.v)
				var res mcp.ListToolsResult
				if err != nil || json.Unmarshal(raw, &res) != nil || len(res.Tools) != 2 {
					t.Errorf("Call(tools/list, %#v) = %s, %v; want 2 tools", params.v, raw, err)
				}
			})
		}
	}
}

func TestClientsHaveTheirOwnSessions(t *testing.T) {
	a := app(t)
	seen := map[string]bool{}
	for range 3 {
		c := adaptertest.New(t, a)
		if seen[c.SessionID()] {
			t.Fatalf("session %s reused", c.SessionID())
		}
		seen[c.SessionID()] = true
	}
}

// store is a table of item names that a live command reads.
type store struct {
	mu    sync.Mutex
	names map[int64]string
}

func (s *store) set(id int64, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[id] = name
}

func liveApp(t *testing.T) (*adapter.Adapter, *store) {
	t.Helper()
	st := &store{names: map[int64]string{1: "one", 2: "two"}}
	a := adapter.Wrap(server.NewMCPServer("test", "1"))
	adapter.Live(a, "items_show", "One item.", func(ctx context.Context, args showArgs) (item, error) {
		adapter.Reads(ctx, "items")
		st.mu.Lock()
		defer st.mu.Unlock()
		name, ok := st.names[args.ID]
		if !ok {
			return item{}, adapter.ErrNotFound
		}
		return item{ID: args.ID, Name: name}, nil
	})
	return a, st
}

func TestListen(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			a, st := liveApp(t)
			c := adaptertest.New(t, a, era.opts...)
			const (
				one      = "app://items_show/1"
				oneAgain = "app://items_show/%31" // the same arguments, spelled otherwise
				two      = "app://items_show/2"
			)
			sub, err := c.Listen(one, oneAgain, two, "app://items_show/abc", "app://nope/1")
			if err != nil {
				t.Fatal(err)
			}
			acked := slices.Sorted(slices.Values(sub.Acknowledged))
			if want := []string{oneAgain, one, two}; !slices.Equal(acked, want) {
				t.Errorf("Acknowledged = %q, want %q", acked, want)
			}
			refused := slices.Sorted(slices.Values(sub.Refused))
			if want := []string{"app://items_show/abc", "app://nope/1"}; !slices.Equal(refused, want) {
				t.Errorf("Refused = %q, want %q", refused, want)
			}

			st.set(1, "uno")
			a.Changed("items")
			c.WaitIdle()
			got := slices.Sorted(slices.Values(sub.Take()))
			if want := []string{oneAgain, one}; !slices.Equal(got, want) {
				t.Errorf("after a change of item 1: %q, want %q", got, want)
			}

			a.Changed("items") // nothing changed in what they return
			c.WaitIdle()
			if got := sub.Take(); len(got) != 0 {
				t.Errorf("after a change that changed nothing: %q", got)
			}

			sub.Close()
			st.set(2, "dos")
			a.Changed("items")
			c.WaitIdle()
			if got := sub.Take(); len(got) != 0 {
				t.Errorf("after Close: %q", got)
			}
			if n := a.LiveStats().Subscriptions; n != 0 {
				t.Errorf("%d subscriptions left after Close", n)
			}
			if got := sub.Received(); len(got) != 2 {
				t.Errorf("Received = %q, want the two updates", got)
			}
		})
	}
}

// A subscription left open ends with the test's client.
func TestListenEndsWithTheClient(t *testing.T) {
	a, _ := liveApp(t)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			c := adaptertest.New(t, a, era.opts...)
			if _, err := c.Listen("app://items_show/1"); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n := a.LiveStats().Subscriptions; n != 0 {
		t.Errorf("%d subscriptions left after the clients ended", n)
	}
}

// Two subscriptions of one client to the same URI are independent on both
// eras: closing one leaves the other listening. On 2025-11-25 the server
// keeps one subscription per session and URI, so Close must not unsubscribe
// a URI that another open subscription of the client still holds.
func TestCloseLeavesAnotherSubscriptionOfTheURI(t *testing.T) {
	const uri = "app://items_show/1"
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			a, st := liveApp(t)
			c := adaptertest.New(t, a, era.opts...)
			first, err := c.Listen(uri)
			if err != nil {
				t.Fatal(err)
			}
			second, err := c.Listen(uri)
			if err != nil {
				t.Fatal(err)
			}
			first.Close()
			st.set(1, "uno")
			a.Changed("items")
			c.WaitIdle()
			if got := second.Take(); !slices.Equal(got, []string{uri}) {
				t.Errorf("the subscription left open received %q, want %q", got, []string{uri})
			}
			if got := first.Take(); len(got) != 0 {
				t.Errorf("the closed subscription received %q", got)
			}
		})
	}
}
