package gosdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestDuplicateKeysOverHTTP checks, on each era, that the example refuses
// a request that gives a JSON key twice, rather than taking the last one as
// encoding/json would.
//
// No SDK can send a duplicate key, so the test lets go-sdk send a real
// tools/call customers_show {"id":1} and replays that very HTTP request
// (its headers, session and, on 2026-07-28, its _meta) with one key
// doubled:
//
//   - an argument: {"id":1,"id":2} answers a tool result with isError,
//     whose structured errors name the field id (taking the last key would
//     answer customer 2);
//   - a key of params: "name" twice answers -32602 naming params in
//     data.errors.
func TestDuplicateKeysOverHTTP(t *testing.T) {
	for _, era := range []string{legacyEra, modernEra} {
		t.Run(era, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			t.Cleanup(cancel)
			wire := newWireLog()
			url := example.StartHTTP(t)
			dumpOnFailure(t, wire)
			hc := httpClient(t, wire)
			w := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, era, wire)

			// go-sdk's own call, the request to replay.
			cctx, ccancel := context.WithTimeout(ctx, callTimeout)
			defer ccancel()
			res, err := w.cs.CallTool(cctx, &mcp.CallToolParams{Name: "customers_show", Arguments: map[string]any{"id": watchedID}})
			if err != nil || res.IsError {
				t.Fatalf("tools/call customers_show id %d with go-sdk: %v %+v", watchedID, err, res)
			}
			sent, ok := wire.last(func(e wireEntry) bool { return e.what == http.MethodPost && e.method == "tools/call" })
			if !ok {
				t.Fatal("the wire log has no tools/call POST of go-sdk's")
			}
			if len(sent.body) > wireCap {
				t.Fatalf("go-sdk's tools/call is longer than the log keeps (%d bytes)", wireCap)
			}

			// 1. An argument given twice: a tool error naming it.
			body := replayBody(t, sent.body, "dup-argument", func(params map[string]json.RawMessage) []byte {
				params["arguments"] = json.RawMessage(`{"id":1,"id":2}`)
				return marshal(t, params)
			})
			reply := postRaw(t, ctx, hc, url, sent.header, body)
			if reply.Status != http.StatusOK {
				t.Errorf("tools/call with arguments {\"id\":1,\"id\":2}: HTTP %d, want 200 (a tool error is a result)", reply.Status)
			}
			if reply.Error != nil {
				t.Fatalf("tools/call with arguments {\"id\":1,\"id\":2}: JSON-RPC error %+v, want a tool result with isError", reply.Error)
			}
			var result struct {
				IsError           bool `json:"isError"`
				StructuredContent struct {
					Errors []struct {
						Field, Message string
					} `json:"errors"`
				} `json:"structuredContent"`
				Content []struct{ Text string } `json:"content"`
			}
			if err := json.Unmarshal(reply.Result, &result); err != nil {
				t.Fatalf("tools/call with arguments {\"id\":1,\"id\":2}: result %s: %v", reply.Result, err)
			}
			errs := result.StructuredContent.Errors
			if !result.IsError || len(errs) != 1 || errs[0].Field != "id" ||
				len(result.Content) != 1 || !strings.Contains(result.Content[0].Text, "id") {
				t.Errorf("tools/call with arguments {\"id\":1,\"id\":2}: result %s; want isError with one structured error for field id, named in the text", reply.Result)
			}

			// 2. A key of params given twice: -32602 naming params.
			body = replayBody(t, sent.body, "dup-params", func(params map[string]json.RawMessage) []byte {
				b := marshal(t, params)
				return append([]byte(`{"name":"customers_show",`), b[1:]...)
			})
			reply = postRaw(t, ctx, hc, url, sent.header, body)
			// On 2026-07-28 the HTTP status follows the code: 400 for
			// -32602 (docs/reading.md).
			wantStatus := http.StatusOK
			if era == modernEra {
				wantStatus = http.StatusBadRequest
			}
			if reply.Status != wantStatus {
				t.Errorf("tools/call with params.name twice: HTTP %d, want %d", reply.Status, wantStatus)
			}
			var data struct {
				Errors []struct {
					Field, Message string
				} `json:"errors"`
			}
			if reply.Error == nil || reply.Error.Code != jsonrpc.CodeInvalidParams ||
				json.Unmarshal(reply.Error.Data, &data) != nil || len(data.Errors) != 1 || data.Errors[0].Field != "params" {
				t.Errorf("tools/call with params.name twice: error %+v, result %s; want %d with data.errors naming params", reply.Error, reply.Result, jsonrpc.CodeInvalidParams)
			}
		})
	}
}

// replayBody is the JSON-RPC request body with its id set to id and its
// params rewritten by edit, which returns them as raw JSON.
func replayBody(t *testing.T, body, id string, edit func(params map[string]json.RawMessage) []byte) []byte {
	t.Helper()
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatalf("go-sdk's request %s: %v", body, err)
	}
	if err := json.Unmarshal(msg["params"], &params); err != nil {
		t.Fatalf("go-sdk's request %s: params: %v", body, err)
	}
	msg["id"] = marshal(t, id)
	msg["params"] = edit(params)
	// json.Marshal would compact, and check, the raw params, but keeps
	// their keys as written.
	return marshal(t, msg)
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawReply is a JSON-RPC response as it came off the wire, with the HTTP
// status it came with.
type rawReply struct {
	Status int             `json:"-"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

// postRaw POSTs body with the headers go-sdk sent (so the session and
// protocol version are the real client's) and returns the response, from
// a JSON reply or from the first message of an event stream, whatever the
// HTTP status.
func postRaw(t *testing.T, ctx context.Context, hc *http.Client, url string, header http.Header, body []byte) rawReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("POST %s: read the reply: %v", body, err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = firstEventData(data)
	}
	r := rawReply{Status: resp.StatusCode}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("POST %s: a reply that is not a JSON-RPC response: %v: %s", body, err, clip(data))
	}
	return r
}

// firstEventData is the data of the first event of an event stream.
func firstEventData(stream []byte) []byte {
	var data []byte
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" && data != nil {
			break
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " ")...)
		}
	}
	return data
}

// TestExactIDsAndRepeatedURIOverHTTP checks, on each era, that a read
// answers the adapter's exact error under the very id the client wrote,
// beyond 2^53 and beyond int64, and that a read giving "uri" twice is
// refused with -32602 naming it. go-sdk sends a real resources/read, whose
// HTTP request is replayed with the id and params edited.
func TestExactIDsAndRepeatedURIOverHTTP(t *testing.T) {
	for _, era := range []string{legacyEra, modernEra} {
		t.Run(era, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			t.Cleanup(cancel)
			wire := newWireLog()
			url := example.StartHTTP(t)
			dumpOnFailure(t, wire)
			hc := httpClient(t, wire)
			w := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, era, wire)

			rctx, rcancel := context.WithTimeout(ctx, callTimeout)
			defer rcancel()
			if _, err := w.cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: "app://customers_show/1"}); err != nil {
				t.Fatalf("resources/read with go-sdk: %v", err)
			}
			sent, ok := wire.last(func(e wireEntry) bool { return e.what == http.MethodPost && e.method == "resources/read" })
			if !ok {
				t.Fatal("the wire log has no resources/read POST of go-sdk's")
			}
			wantStatus := http.StatusOK
			if era == modernEra {
				wantStatus = http.StatusBadRequest // -32602 on 2026-07-28
			}
			for _, id := range []string{"9007199254740993", "12345678901234567890", `"read-7"`} {
				body := replayWithID(t, sent.body, id, func(params map[string]json.RawMessage) []byte {
					params["uri"] = marshal(t, "app://customers_show/twelve")
					return marshal(t, params)
				})
				header := sent.header.Clone()
				if header.Get("Mcp-Name") != "" {
					header.Set("Mcp-Name", "app://customers_show/twelve") // 2026-07-28 names it in a header too
				}
				reply := postRaw(t, ctx, hc, url, header, body)
				var data struct {
					Errors []struct{ Field, Message string } `json:"errors"`
				}
				if reply.Error == nil || reply.Error.Code != jsonrpc.CodeInvalidParams || string(reply.ID) != id ||
					json.Unmarshal(reply.Error.Data, &data) != nil || len(data.Errors) != 1 || data.Errors[0].Field != "id" || reply.Status != wantStatus {
					t.Errorf("read of customers_show/twelve with id %s: HTTP %d, id %s, error %+v; want %d, -32602 with data.errors naming id, under id %s",
						id, reply.Status, reply.ID, reply.Error, wantStatus, id)
				}
			}
			body := replayWithID(t, sent.body, "8", func(params map[string]json.RawMessage) []byte {
				b := marshal(t, params)
				return append([]byte(`{"uri":"app://customers_show/2",`), b[1:]...)
			})
			reply := postRaw(t, ctx, hc, url, sent.header, body)
			if reply.Error == nil || reply.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(reply.Error.Message, `"uri" twice`) || reply.Status != wantStatus {
				t.Errorf("read with params.uri twice: HTTP %d, error %+v; want %d, -32602 naming uri", reply.Status, reply.Error, wantStatus)
			}
		})
	}
}

// replayWithID is replayBody with the id written as raw JSON, exactly.
func replayWithID(t *testing.T, body, id string, edit func(params map[string]json.RawMessage) []byte) []byte {
	t.Helper()
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(replayBody(t, body, "", edit), &msg); err != nil {
		t.Fatal(err)
	}
	msg["id"] = json.RawMessage(id)
	return marshal(t, msg)
}
