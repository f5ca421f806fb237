package adapter

import (
	"context"
	"encoding/json"
	"sync"
)

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

// idKey spells a JSON-RPC id as its compact JSON, the same for the id the
// hook sees and the id the response carries.
func idKey(id any) string {
	if raw, ok := id.(json.RawMessage); ok {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			id = v
		}
	}
	b, _ := json.Marshal(id)
	return string(b)
}

func (b *errorBox) put(id any, e *rpcError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]*rpcError)
	}
	b.m[idKey(id)] = e
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
