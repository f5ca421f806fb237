package adapter_test

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

// edgeClients are clients of a, serving srv, through each of its edges on
// era: Streamable HTTP (HTTPHandler), stdio (ServeStdio), and adaptertest
// (Adapter.HandleMessage).
func edgeClients(t *testing.T, srv *server.MCPServer, a *adapter.Adapter, era edgeEra) (*edgeHTTPClient, *edgeStdioClient, *adaptertest.Client) {
	t.Helper()
	httpc := newEdgeHTTPClient(t, edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv))), era)
	stdio := newEdgeStdioClient(t, era, edgeServeStdio(a))
	var opts []adaptertest.Option
	if !era.modern() {
		opts = append(opts, adaptertest.Legacy())
	}
	return httpc, stdio, adaptertest.New(t, a, opts...)
}

// Every edge answers a read with the same error object, byte for byte:
// Streamable HTTP, stdio, and adaptertest (Adapter.HandleMessage).
func TestEdgesAnswerAlike(t *testing.T) {
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			srv, a := edgeApp(t)
			httpc, stdio, inproc := edgeClients(t, srv, a, era)

			for _, tc := range edgeCases {
				if tc.check == nil {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					h, err := json.Marshal(httpc.read(tc.uri).resp.Error)
					if err != nil {
						t.Fatal(err)
					}
					s, err := json.Marshal(stdio.read(tc.uri).Error)
					if err != nil {
						t.Fatal(err)
					}
					_, werr := inproc.ReadRaw(tc.uri)
					i, err := json.Marshal(werr)
					if err != nil {
						t.Fatal(err)
					}
					if string(h) != string(s) || string(h) != string(i) {
						t.Errorf("the edges disagree:\nHTTP        %s\nstdio       %s\nadaptertest %s", h, s, i)
					}
					var e edgeWireError
					if err := json.Unmarshal(i, &e); err != nil {
						t.Fatal(err)
					}
					tc.check(t, era, &e)
				})
			}
		})
	}
}
