package adapter_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

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
