package adapter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// edgeStdioClient speaks raw newline-delimited JSON-RPC to a server on pipes.
// mcp-go keeps one stdio session per process, so these tests do not run in
// parallel.
type edgeStdioClient struct {
	t      *testing.T
	era    edgeEra
	in     *io.PipeWriter
	out    *bufio.Reader
	nextID int
}

// newEdgeStdioClient serves through serve (ServeStdio, or plain mcp-go) on
// pipes until the test ends; on the legacy era it initializes first.
func newEdgeStdioClient(t *testing.T, era edgeEra, serve func(ctx context.Context, in io.Reader, out io.Writer) error) *edgeStdioClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serve(context.Background(), inR, outW)
		outW.Close()
		done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		// Drain what the server still writes, so that it can return.
		go io.Copy(io.Discard, outR)
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	c := &edgeStdioClient{t: t, era: era, in: inW, out: bufio.NewReaderSize(outR, 1<<16)}
	if !era.modern() {
		if r := c.call(string(mcp.MethodInitialize), edgeInitializeParams(era)); r.Error != nil {
			t.Fatalf("initialize: %+v", r.Error)
		}
		c.write(map[string]any{"jsonrpc": "2.0", "method": mcp.MethodNotificationInitialized})
	}
	return c
}

func (c *edgeStdioClient) write(msg map[string]any) {
	c.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a request and reads lines until its response.
func (c *edgeStdioClient) call(method string, params map[string]any) edgeResponse {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	if method != string(mcp.MethodInitialize) {
		params = edgeRequestParams(c.era, params)
	}
	c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return c.await(method, id)
}

// callEdited is call with the request's line edited by edit before it is
// sent: to send what no JSON encoder writes.
func (c *edgeStdioClient) callEdited(method string, params map[string]any, edit func([]byte) []byte) edgeResponse {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": edgeRequestParams(c.era, params)})
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(edit(b), '\n')); err != nil {
		c.t.Fatal(err)
	}
	return c.await(method, id)
}

// await reads lines until the response to the request id.
func (c *edgeStdioClient) await(method string, id int) edgeResponse {
	c.t.Helper()
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("%s: reading: %v", method, err)
		}
		var r edgeResponse
		if err := json.Unmarshal(line, &r); err != nil {
			c.t.Fatalf("%s: line %q: %v", method, line, err)
		}
		if r.Method != "" {
			// A notification (the progress of the "event stream" case
			// arrives on its own goroutine's time); lines stay whole.
			continue
		}
		if string(r.ID) == fmt.Sprint(id) {
			return r
		}
		c.t.Fatalf("%s: response for id %s, want %d", method, r.ID, id)
	}
}

func (c *edgeStdioClient) read(uri string) edgeResponse {
	c.t.Helper()
	return c.call(string(mcp.MethodResourcesRead), map[string]any{"uri": uri})
}

// A request that gives one of its keys twice is refused: through the edge
// with -32602, data.errors and the adapter's words; on plain mcp-go, which
// refuses a repeated member of the message or its params before any hook,
// with its -32600 naming the member (docs/transports.md, docs/reading.md).
func TestStdioRequestRepeatingAKey(t *testing.T) {
	const msg = `params: has the key "uri" twice; a JSON object's keys must differ`
	for _, era := range edgeEras {
		for _, edge := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/edge=%v", era.name, edge), func(t *testing.T) {
				srv, a := edgeApp(t)
				serve := edgeServeStdio(a)
				if !edge {
					serve = func(ctx context.Context, in io.Reader, out io.Writer) error {
						return server.NewStdioServer(srv).Listen(ctx, in, out)
					}
				}
				c := newEdgeStdioClient(t, era, serve)
				r := c.callEdited(string(mcp.MethodResourcesRead), map[string]any{"uri": "app://items_show/7"}, func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"uri":`), []byte(`"uri":"app://items_show/8","uri":`), 1)
				})
				e := r.Error
				wantCode, wantMsg, wantData := mcp.INVALID_REQUEST, `duplicate member "params.uri"`, false
				if edge {
					wantCode, wantMsg, wantData = mcp.INVALID_PARAMS, msg, true
				}
				if e == nil || e.Code != wantCode || e.Message != wantMsg || (len(e.Data) != 0) != wantData {
					t.Errorf("read with uri twice = %+v, want %d %q, data %v", e, wantCode, wantMsg, wantData)
				}
			})
		}
	}
}

// edgeServeStdio serves a's server through the adapter's stdio edge.
func edgeServeStdio(a *adapter.Adapter) func(context.Context, io.Reader, io.Writer) error {
	return func(ctx context.Context, in io.Reader, out io.Writer) error {
		return a.ServeStdio(ctx, in, out)
	}
}

func TestServeStdioAnswersExactErrors(t *testing.T) {
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			_, a := edgeApp(t)
			c := newEdgeStdioClient(t, era, edgeServeStdio(a))
			for _, tc := range edgeCases {
				t.Run(tc.name, func(t *testing.T) {
					r := c.read(tc.uri)
					edgeRun(t, era, tc, r.Result, r.Error)
				})
			}
			u, _ := json.Marshal(c.read("app://items_secret/1").Error)
			m, _ := json.Marshal(c.read("app://items_nope/1").Error)
			edgeIndistinguishable(t, string(u), "app://items_secret/1", string(m), "app://items_nope/1")

			r := c.read("app://readme")
			if r.Error != nil {
				t.Fatalf("read of the user's resource: %+v", r.Error)
			}
		})
	}
}

// Without the edge a read still answers its exact error (server.NewHandlerError).
func TestPlainStdioAnswersExactReadErrors(t *testing.T) {
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			srv, _ := edgeApp(t)
			c := newEdgeStdioClient(t, era, func(ctx context.Context, in io.Reader, out io.Writer) error {
				return server.NewStdioServer(srv).Listen(ctx, in, out)
			})
			r := c.read("app://items_index?page=0&per_page=500")
			if e := r.Error; e == nil || e.Code != mcp.INVALID_PARAMS || !strings.Contains(string(e.Data), `"errors"`) ||
				e.Message != "invalid arguments: page: must be at least 1; per_page: must be between 1 and 100" {
				t.Errorf("read = %+v, want -32602 with the message and data.errors", e)
			}
			if r := c.read("app://items_show/7"); r.Error != nil {
				t.Errorf("read: %+v", r.Error)
			}
		})
	}
}
