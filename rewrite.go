package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/internal/jsonkeys"
)

// How exact errors reach the wire.
//
// mcp-go answers every error a resource handler returns with JSON-RPC -32603
// and no data, so a read cannot say "-32602, and here are the fields" from
// inside mcp-go. The adapter's OnError hook (errors.go) knows the exact error
// and leaves it in an errorBox (below) it finds in the request's context,
// keyed by the request id. The edges put a box into the context they hand
// mcp-go and, where an error response for an id with an entry goes by, swap
// in the entry:
//
//   - HandleMessage, around MCPServer.HandleMessage: the seam
//     for in-process use and for adaptertest;
//   - HTTPHandler (http.go), in the bytes Streamable HTTP writes, JSON
//     bodies and event streams alike;
//   - ServeStdio (stdio.go), in the lines the stdio server writes.
//
// Everything else the server writes passes through byte for byte.

// maxRewrite bounds the bytes of one message (a JSON body, an event, a line)
// that an edge holds in order to rewrite it. Error responses are a few hundred
// bytes; a message longer than this is passed through unmodified as soon as it
// outgrows the bound, so that a large result is never held, and any error it
// might have carried keeps mcp-go's form (-32603 or mcp-go's own not-found).
const maxRewrite = 64 << 10

// messageKind is what the top-level keys of a JSON-RPC message say it is.
type messageKind int

const (
	kindOther  messageKind = iota // a request, a notification, or not JSON-RPC
	kindResult                    // a response with a result
	kindError                     // a response with an error
)

// peekMessage classifies msg by its top-level keys and returns its id. It
// reads keys in order and stops at the first that decides the kind, so a
// large result is not scanned: mcp-go writes "jsonrpc", "id" and then
// "result" or "error". msg may be a prefix of a message (see discardEntry);
// id is nil when msg ends, or the kind is decided, before an id is seen.
func peekMessage(msg []byte) (kind messageKind, id json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return kindOther, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return kind, id
		}
		key, _ := tok.(string)
		switch key {
		case "result":
			return kindResult, id
		case "method", "params":
			return kindOther, id
		case "error":
			kind = kindError
			if id != nil {
				return kind, id
			}
		case "id":
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return kind, nil
			}
			if len(bytes.TrimSpace(msg[dec.InputOffset():])) == 0 {
				// The prefix ends with the id: 12 may be the start of 123.
				return kind, nil
			}
			id = raw
			if kind == kindError {
				return kind, id
			}
			continue
		}
		// Skip the value of a key that decides nothing (or of "error" when
		// the id comes after it).
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return kind, id
		}
	}
	return kind, id
}

// rewritten is an error response an edge rewrote.
type rewritten struct {
	msg      []byte // the new message, without framing
	from, to int    // the error code mcp-go wrote and the one now sent
}

// wireErrorResponse is the JSON-RPC error response as the edges write it, in
// mcp-go's key order.
type wireErrorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *rpcError       `json:"error"`
}

// rewriteMessage returns msg, one JSON-RPC message without framing, with its
// error replaced by the box's entry for its id. ok is false, and msg is to be
// sent as it is, when msg is not an error response, or its id has no entry,
// or it is longer than maxRewrite. Any response takes its id's entry out of
// the box, so that a box that lives as long as a connection keeps nothing of
// the requests already answered.
func rewriteMessage(box *errorBox, msg []byte) (rewritten, bool) {
	if box.empty() {
		return rewritten{}, false // the common case: nothing failed
	}
	if len(msg) > maxRewrite {
		discardEntry(box, msg[:maxRewrite])
		return rewritten{}, false
	}
	kind, id := peekMessage(msg)
	if kind == kindOther || id == nil {
		return rewritten{}, false
	}
	e := box.take(id)
	if e == nil || kind != kindError {
		return rewritten{}, false
	}
	var orig struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &orig) != nil {
		return rewritten{}, false
	}
	out, err := json.Marshal(wireErrorResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: e})
	if err != nil {
		return rewritten{}, false
	}
	return rewritten{msg: out, from: orig.Error.Code, to: e.Code}, true
}

// discardEntry removes from the box the entry of the response whose first
// bytes are prefix, when those bytes show its id. An edge calls it for a
// message too long to rewrite, which it passes through as mcp-go wrote it.
func discardEntry(box *errorBox, prefix []byte) {
	if kind, id := peekMessage(prefix); kind != kindOther && id != nil {
		box.take(id)
	}
}

// modernHTTPStatus is the HTTP status that protocol version 2026-07-28
// prescribes for a JSON-RPC error code on Streamable HTTP, as mcp-go applies
// it to the responses it writes (server/streamable_http_modern.go,
// httpStatusForJSONRPCError). HTTPHandler uses it to keep the status in step
// with the code it rewrote.
func modernHTTPStatus(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
		mcp.UNSUPPORTED_PROTOCOL_VERSION, mcp.INVALID_REQUEST,
		mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeAll writes p to w, reporting a short write as an error.
func writeAll(w io.Writer, p []byte) error {
	n, err := w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// errorBox carries the exact errors of failed requests from the adapter's
// OnError hook to the transport edge that writes the responses. An edge puts
// a box into the context it hands mcp-go (the HTTP request's, or the stdio
// connection's) and, when it writes an error response, swaps in the error
// the box holds for that request id.
type errorBox struct {
	mu sync.Mutex
	m  map[string]*rpcError
}

type errorBoxKey struct{}

// withErrorBox returns ctx carrying a new box.
func withErrorBox(ctx context.Context) (context.Context, *errorBox) {
	b := &errorBox{}
	return context.WithValue(ctx, errorBoxKey{}, b), b
}

func errorBoxFrom(ctx context.Context) *errorBox {
	b, _ := ctx.Value(errorBoxKey{}).(*errorBox)
	return b
}

// idKey spells a JSON-RPC id as mcp-go keys it (mcp.RequestId.String):
// the same for the id a hook sees, the id a response carries as raw JSON,
// and an mcp.RequestId, and exact for any JSON number, beyond 2^53 too.
func idKey(id any) string {
	switch v := id.(type) {
	case json.RawMessage:
		var rid mcp.RequestId
		if json.Unmarshal(v, &rid) != nil {
			return "raw:" + string(v)
		}
		return rid.String()
	case mcp.RequestId:
		return v.String()
	case *mcp.RequestId:
		if v == nil {
			return "<nil>"
		}
		return v.String()
	}
	return mcp.NewRequestId(id).String()
}

// maxBoxedID bounds the spelled id of an entry the box keeps. A response
// longer than maxRewrite gives up its entry only when its first maxRewrite
// bytes show the whole id (discardEntry); a longer id never shows, so its
// entry would stay as long as the box, a stdio connection's lifetime, and a
// client could grow the box by a request at a time. Its error keeps mcp-go's
// form instead.
const maxBoxedID = maxRewrite / 2

// put records e for id, unless id is longer than maxBoxedID.
func (b *errorBox) put(id any, e *rpcError) {
	k := idKey(id)
	if len(k) > maxBoxedID {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]*rpcError)
	}
	b.m[k] = e
}

// empty reports whether the box holds no error: no response needs
// rewriting, nor any entry taking out.
func (b *errorBox) empty() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m) == 0
}

// take removes and returns the error recorded for id, nil when there is
// none.
func (b *errorBox) take(id any) *rpcError {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := idKey(id)
	e := b.m[k]
	delete(b.m, k)
	return e
}

// HandleMessage handles one JSON-RPC message the way the server's own
// MCPServer.HandleMessage does, and returns the response with the exact error
// the adapter means for it: -32602 with data.errors for arguments that do not
// convert or validate, resource-not-found with data.uri for the era, and so on
// (see docs/reading.md). A nil response means the message was a notification.
//
// It is the seam for transports of your own and for tests: ctx should carry
// what a transport puts there, above all the client session
// (srv.WithContext(ctx, session)), as mcp-go's transports do.
// HTTPHandler, ServeStdio and package adaptertest all answer with exactly
// the errors HandleMessage returns.
func (a *Adapter) HandleMessage(ctx context.Context, raw json.RawMessage) mcp.JSONRPCMessage {
	if e := repeatedKeyError(raw); e != nil {
		var resp mcp.JSONRPCError
		if json.Unmarshal(errorResponseTo(raw, e), &resp) == nil {
			return resp
		}
	}
	ctx, box := withErrorBox(ctx)
	resp := a.srv.HandleMessage(ctx, raw)
	switch r := resp.(type) {
	case mcp.JSONRPCError:
		if e := box.take(r.ID); e != nil {
			r.Error = mcp.NewJSONRPCErrorDetails(e.Code, e.Message, e.Data)
			return r
		}
	case *mcp.JSONRPCError:
		if r != nil {
			if e := box.take(r.ID); e != nil {
				out := *r
				out.Error = mcp.NewJSONRPCErrorDetails(e.Code, e.Message, e.Data)
				return &out
			}
		}
	}
	return resp
}

// A request may give a key of its own twice, as arguments may:
// {"name":"t","arguments":{"max":0.5},"arguments":{"max":2}}. mcp-go keeps
// the last, where a proxy that checked the first (some parsers keep the
// first) meant that one; refusing duplicates inside the arguments alone
// left the whole object to be given twice. So a request of a method the
// adapter serves is refused when any object in it repeats a key, with
// -32602 naming the place. Inside a tools/call's arguments, canonicalArguments
// refuses it instead, as an isError result naming the argument, as for
// Adapter.Call.

// served reports the methods whose requests the adapter serves, or reads
// the parameters of.
func served(m mcp.MCPMethod) bool {
	switch m {
	case mcp.MethodToolsCall, mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe,
		mcp.MethodSubscriptionsListen, mcp.MethodCompletionComplete:
		return true
	}
	return false
}

// structObjects are the objects of the served requests that mcp-go
// decodes into structs, whose keys encoding/json matches whatever their
// case (repeatedKey): the message, its params, and a completion's ref,
// argument and context. _meta, a call's arguments and a completion's
// context arguments are maps, where "a" and "A" are two keys.
func structObjects() [][]string {
	return [][]string{{}, {"params"}, {"params", "ref"}, {"params", "argument"}, {"params", "context"}}
}

// ambiguousRequestHook is the request-initialization hook that refuses
// those requests on transports the adapter's edges do not serve; the edges
// refuse them before mcp-go reads them (repeatedKeyError), since mcp-go
// refuses a repeated member of the message or its params itself, with
// -32600 and no word of which.
func (a *Adapter) ambiguousRequestHook(ctx context.Context, id any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || viaHTTPEdge(ctx) {
		return nil // HTTPHandler refused it already, were it ambiguous
	}
	err := repeatedKeyError(raw)
	if err == nil {
		return nil
	}
	if box := errorBoxFrom(ctx); box != nil {
		box.put(id, err)
	}
	return err
}

// repeatedKeyError is the -32602 that refuses raw, a request of a method
// the adapter serves that repeats a key, naming the place; nil for any
// other message.
func repeatedKeyError(raw []byte) *rpcError {
	var m struct {
		Method mcp.MCPMethod `json:"method"`
	}
	if json.Unmarshal(raw, &m) != nil || !served(m.Method) {
		return nil
	}
	at, key, twice := jsonkeys.Repeated(raw, structObjects())
	if !twice || m.Method == mcp.MethodToolsCall && len(at) >= 2 && at[0] == "params" && at[1] == "arguments" {
		return nil
	}
	fe := duplicateKeyError(at, key).Errors[0]
	return &rpcError{Code: mcp.INVALID_PARAMS, Message: fe.Error(), Data: &ValidationError{Errors: []FieldError{fe}}}
}

// errorResponseTo is the JSON-RPC error response e to msg, under msg's id
// exactly as msg spells it (null when msg shows none, or is a response).
func errorResponseTo(msg []byte, e *rpcError) []byte {
	kind, id := peekMessage(msg)
	if id == nil || kind != kindOther {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(wireErrorResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: e})
	return b
}
