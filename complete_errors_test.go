package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

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
