package adapter

import (
	"context"
	"encoding/json"
	"testing"
)

// TestObserverCancelled: a read or a tools/call whose request was
// cancelled while its command ran (the client gave up) ends canceled, not
// internal: the adapter logs it at Debug, as no failure of the server's,
// and an Observer must not count it as one.
func TestObserverCancelled(t *testing.T) {
	rec := &recorder{}
	a := newLiveServer(t, newItemStore(3), WithObserver(rec))
	entered := make(chan struct{}, 1)
	Live(a, "items_wait", "Waits for its client to give up.", func(ctx context.Context, args itemArgs) (item, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return item{}, ctx.Err()
	})
	for _, tc := range []struct {
		kind   OpKind
		method string
		params map[string]any
	}{
		{OpRead, "resources/read", map[string]any{"uri": "app://items_wait/1"}},
		{OpCall, "tools/call", map[string]any{"name": "items_wait", "arguments": map[string]any{"id": 1}}},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": tc.method, "params": tc.params})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.HandleMessage(ctx, msg)
			}()
			<-entered
			cancel()
			<-done
			ops := rec.take(tc.kind)
			if len(ops) != 1 || ops[0].ends != 1 || ops[0].outcome != OutcomeCanceled {
				t.Fatalf("observed %+v, want one ended %q", ops, OutcomeCanceled)
			}
		})
	}

	// A command that returns context.Canceled of its own, while its
	// request goes on, failed.
	Live(a, "items_cancels", "Fails with a cancellation of its own.", func(ctx context.Context, args itemArgs) (item, error) {
		return item{}, context.Canceled
	})
	a.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://items_cancels/1"}}`))
	if ops := rec.take(OpRead); len(ops) != 1 || ops[0].outcome != OutcomeInternal {
		t.Fatalf("observed %+v, want one internal", ops)
	}
}
