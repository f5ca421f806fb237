package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// What a re-read costs the server (docs/performance.md, "Kept results"):
// resources/read of the example's URIs through the whole server as it
// serves (the middleware that logs every call included, the read gate, the
// SQLite store), one read at a time, each request decoded and its response
// encoded as a transport does. In kept, a
// session subscribes to the URI first, so that its live query keeps the
// result and every read is answered from it; in run, nothing subscribes,
// and every read runs the command, as every re-read did before kept
// results.
//
//	go test -run '^$' -bench ReadKeptOrRun -count 5 ./examples/customers
func BenchmarkReadKeptOrRun(b *testing.B) {
	for _, uri := range []string{"app://customers_index", "app://customers_show/1", "app://orders_between/2024-01-01/2024-12-31"} {
		for _, kept := range []bool{true, false} {
			name := "run"
			if kept {
				name = "kept"
			}
			b.Run(uri[len("app://"):]+"/"+name, func(b *testing.B) { benchReadKeptOrRun(b, uri, kept) })
		}
	}
}

func benchReadKeptOrRun(b *testing.B, uri string, kept bool) {
	st, err := openStore(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	a := newAdapter(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if kept {
		watcher := benchClient(b, a.Server())
		acked := make(chan struct{}, 1)
		watcher.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
				acked <- struct{}{}
			}
		})
		stop, err := watcher.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}},
			func(err error) { b.Error("listen:", err) })
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(stop)
		<-acked
	}
	// The server's work for a read, as a transport hands it over: the
	// request decoded and served, the response encoded. An in-process
	// client would add its own decoding of the answer, most of the time
	// for a large one.
	raw := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
	ctx := context.Background()
	read := func() {
		b, err := json.Marshal(a.HandleMessage(ctx, raw))
		if err != nil || !bytes.Contains(b, []byte(`"contents"`)) {
			panic(fmt.Sprintf("read %s: %s, %v", uri, b, err))
		}
	}
	read()
	if answered := a.LiveStats().KeptAnswers; kept != (answered == 1) {
		b.Fatalf("kept=%v, but %d reads were answered from a kept result", kept, answered)
	}
	b.ReportAllocs()
	for b.Loop() {
		read()
	}
}

// benchClient is an initialized in-process client of srv.
func benchClient(b *testing.B, srv *server.MCPServer) *client.Client {
	b.Helper()
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		b.Fatal(err)
	}
	return c
}
