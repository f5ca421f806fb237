package adapter

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/internal/jsonkeys"
)

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
// those requests; the edges answer the boxed error.
func (a *Adapter) ambiguousRequestHook(ctx context.Context, id any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
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
	err := &rpcError{Code: mcp.INVALID_PARAMS, Message: fe.Error(), Data: &ValidationError{Errors: []FieldError{fe}}}
	if box := errorBoxFrom(ctx); box != nil {
		box.put(id, err)
	}
	return err
}
