package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
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

// A variable the template lacks answers -32602 naming it in data.errors,
// on HTTP and stdio, however long the client made the name: mcp-go's own
// answer carries the error's message, and one longer than the edges hold
// (64 KiB) would go out as mcp-go's -32603.
func TestEdgesCompleteUnknownVariable(t *testing.T) {
	const ref = "app://items_index{?page,per_page,sort}"
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			srv, a := edgeApp(t)
			httpc := newEdgeHTTPClient(t, edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv))), era)
			stdio := newEdgeStdioClient(t, era, edgeServeStdio(a))
			for _, name := range []string{"nope", strings.Repeat("v", 70<<10)} {
				params := map[string]any{
					"ref":      map[string]any{"type": "ref/resource", "uri": ref},
					"argument": map[string]any{"name": name, "value": ""},
				}
				r := httpc.post(string(mcp.MethodCompletionComplete), params)
				wantStatus := http.StatusOK
				if era.modern() {
					wantStatus = http.StatusBadRequest
				}
				if r.status != wantStatus {
					t.Errorf("HTTP, a name of %d bytes: status %d, want %d", len(name), r.status, wantStatus)
				}
				for edge, e := range map[string]*edgeWireError{"HTTP": r.resp.Error, "stdio": stdio.call(string(mcp.MethodCompletionComplete), params).Error} {
					if e == nil {
						t.Errorf("%s, a name of %d bytes: no error", edge, len(name))
						continue
					}
					var data struct {
						Errors []struct{ Field string }
					}
					_ = json.Unmarshal(e.Data, &data)
					if e.Code != mcp.INVALID_PARAMS || len(data.Errors) != 1 || data.Errors[0].Field != name {
						t.Errorf("%s, a name of %d bytes: code %d, %d errors in data; want %d naming it",
							edge, len(name), e.Code, len(data.Errors), mcp.INVALID_PARAMS)
					}
					if len(e.Message) > 300 {
						t.Errorf("%s, a name of %d bytes: a message of %d bytes", edge, len(name), len(e.Message))
					}
				}
			}
		})
	}
}

// The application of the completion error tests: one command whose
// function and whose completer fail alike for the same id, so that a read
// of app://things_show/<id> and a completion with id=<id> can be compared.

type thingArgs struct {
	ID   int64  `json:"id"`
	Kind string `json:"kind,omitempty"`
}

func (a thingArgs) Validate() error {
	var errs adapter.ValidationError
	if a.ID < 0 {
		errs.Add("id", "must not be negative")
	}
	return errs.Err()
}

// Ids whose command and completer fail, each with an error of its kind.
const (
	thingMissing  = 404 // adapter.ErrNotFound, wrapped
	thingInvalid  = 422 // a *adapter.ValidationError
	thingInternal = 500 // an error the adapter does not know, with a secret
)

const thingSecret = "password=hunter2"

func thingError(id int64) error {
	switch id {
	case thingMissing:
		return fmt.Errorf("thing %d: %w", id, adapter.ErrNotFound)
	case thingInvalid:
		return &adapter.ValidationError{Errors: []adapter.FieldError{{Field: "kind", Message: "no kind fits thing 422"}}}
	case thingInternal:
		return errors.New("thing 500: " + thingSecret)
	}
	return nil
}

// levelLog records the level of every log record, to tell what was logged
// as an Error.
type levelLog struct {
	mu     sync.Mutex
	levels []slog.Level
}

func (l *levelLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *levelLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *levelLog) WithGroup(string) slog.Handler            { return l }
func (l *levelLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.levels = append(l.levels, r.Level)
	return nil
}

// errorsSince counts the Error records after the first n, and returns the
// new total.
func (l *levelLog) errorsSince(n int) (errs, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lv := range l.levels[n:] {
		if lv >= slog.LevelError {
			errs++
		}
	}
	return errs, len(l.levels)
}

func thingApp(t *testing.T) (*server.MCPServer, *adapter.Adapter, *levelLog) {
	t.Helper()
	log := &levelLog{}
	srv := server.NewMCPServer("things", "1")
	a := adapter.Wrap(srv, adapter.WithLogger(slog.New(log)), adapter.WithCompletionFallback(userProvider{}))
	adapter.Live(a, "things_show", "One thing.", func(_ context.Context, args thingArgs) (thingArgs, error) {
		return args, thingError(args.ID)
	}, adapter.CompleteWith("kind", func(_ context.Context, _ string, args map[string]any) ([]string, error) {
		id, _ := args["id"].(int64)
		if err := thingError(id); err != nil {
			return nil, err
		}
		return []string{"big", "small"}, nil
	}))
	return srv, a, log
}

// thingEdge is one edge the tests speak (HTTP, stdio, adaptertest's
// HandleMessage): a read and a completion,
// each answering its error object as it came off the wire.
type thingEdge struct {
	name     string
	read     func(uri string) *edgeWireError
	complete func(params map[string]any) (json.RawMessage, *edgeWireError)
}

func thingEdges(t *testing.T, era edgeEra) ([]thingEdge, *levelLog) {
	srv, a, log := thingApp(t)
	httpc, stdio, inproc := edgeClients(t, srv, a, era)
	method := string(mcp.MethodCompletionComplete)
	return []thingEdge{
		{"HTTP",
			func(uri string) *edgeWireError { return httpc.read(uri).resp.Error },
			func(p map[string]any) (json.RawMessage, *edgeWireError) {
				r := httpc.post(method, p)
				return r.resp.Result, r.resp.Error
			}},
		{"stdio",
			func(uri string) *edgeWireError { return stdio.read(uri).Error },
			func(p map[string]any) (json.RawMessage, *edgeWireError) {
				r := stdio.call(method, p)
				return r.Result, r.Error
			}},
		{"adaptertest",
			func(uri string) *edgeWireError {
				_, werr := inproc.ReadRaw(uri)
				return asEdgeWireError(werr)
			},
			func(p map[string]any) (json.RawMessage, *edgeWireError) {
				res, err := inproc.Call(method, p)
				var werr *adaptertest.WireError
				errors.As(err, &werr)
				return res, asEdgeWireError(werr)
			}},
	}, log
}

// asEdgeWireError is the wire error adaptertest answered, nil for none.
func asEdgeWireError(e *adaptertest.WireError) *edgeWireError {
	if e == nil {
		return nil
	}
	return &edgeWireError{Code: e.Code, Message: e.Message, Data: e.Data}
}

func completeParams(ref, name, value string, given map[string]string) map[string]any {
	return map[string]any{
		"ref":      map[string]any{"type": "ref/resource", "uri": ref},
		"argument": map[string]any{"name": name, "value": value},
		"context":  map[string]any{"arguments": given},
	}
}

// A completer's ErrNotFound, *ValidationError or unknown error answers
// exactly as the command's own does in a read: the same code, message and
// data on every edge; only the unknown error is logged as an Error, and its
// text stays hidden.
func TestEdgesCompleterErrorsAnswerAsReads(t *testing.T) {
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			edges, log := thingEdges(t, era)
			for _, edge := range edges {
				for _, id := range []int64{thingMissing, thingInvalid, thingInternal} {
					uri := "app://things_show/" + strconv.FormatInt(id, 10)
					read := edge.read(uri)
					_, n := log.errorsSince(0)
					_, got := edge.complete(completeParams(uri, "kind", "", map[string]string{"id": strconv.FormatInt(id, 10)}))
					logged, _ := log.errorsSince(n)
					if read == nil || got == nil {
						t.Fatalf("%s, id %d: read error %+v, completion error %+v; want both", edge.name, id, read, got)
					}
					r, _ := json.Marshal(read)
					c, _ := json.Marshal(got)
					if string(r) != string(c) {
						t.Errorf("%s, id %d: the completion answers unlike the read:\nread       %s\ncompletion %s", edge.name, id, r, c)
					}
					wantLogged := 0
					if id == thingInternal {
						wantLogged = 1
					}
					if logged != wantLogged {
						t.Errorf("%s, id %d: the completion logged %d Error records, want %d", edge.name, id, logged, wantLogged)
					}
				}
			}
		})
	}
}

// An expanded URI a read refuses is refused as the reference of a
// completion too, with the read's very error: malformed (an extra segment,
// bad percent-encoding, a parameter the template lacks), an argument that
// does not convert, one the Validate method refuses, and the plain
// scheme://command of a template with a required variable. A well-formed
// one and the template itself complete; a template the adapter does not
// own still goes to the fallback.
func TestEdgesCompletionRefusesReferencesAReadRefuses(t *testing.T) {
	refused := []string{
		"app://things_show/abc",
		"app://things_show/1/2",
		"app://things_show/%zz",
		"app://things_show/1?color=red",
		"app://things_show/-1",
		"app://things_show",
	}
	completes := map[string]string{
		"app://things_show/7?kind=big":  `["big","small"]`,
		"app://things_show/{id}{?kind}": `["big","small"]`,
		"app://user_template/{x}":       `["user:app://user_template/{x}:kind"]`,
	}
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			edges, _ := thingEdges(t, era)
			for _, edge := range edges {
				for _, ref := range refused {
					read := edge.read(ref)
					res, got := edge.complete(completeParams(ref, "kind", "", nil))
					if read == nil || got == nil {
						t.Errorf("%s, %s: read error %+v, completion error %+v (result %s); want both", edge.name, ref, read, got, res)
						continue
					}
					r, _ := json.Marshal(read)
					c, _ := json.Marshal(got)
					if string(r) != string(c) {
						t.Errorf("%s, %s: the completion answers unlike the read:\nread       %s\ncompletion %s", edge.name, ref, r, c)
					}
				}
				for ref, want := range completes {
					res, e := edge.complete(completeParams(ref, "kind", "", nil))
					var out struct {
						Completion struct{ Values json.RawMessage }
					}
					_ = json.Unmarshal(res, &out)
					if e != nil || string(out.Completion.Values) != want {
						t.Errorf("%s, %s: values %s, error %+v; want %s", edge.name, ref, out.Completion.Values, e, want)
					}
				}
			}
		})
	}
}
