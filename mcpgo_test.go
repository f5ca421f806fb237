package adapter

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestMCPGoInternals fails when an mcp-go upgrade moves what mcpgo.go reads:
// each read must succeed and see what the public API set.
func TestMCPGoInternals(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	if serving, ok := hasSessions(srv); !ok || serving {
		t.Fatalf("hasSessions of a new server: serving %v, ok %v: mcp-go moved its session map; update mcpgo.go", serving, ok)
	}
	s := &fakeSession{id: "s", ch: make(chan mcp.JSONRPCNotification, 1)}
	if err := srv.RegisterSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if serving, ok := hasSessions(srv); !ok || !serving {
		t.Fatalf("hasSessions with a session: serving %v, ok %v: mcp-go moved its session map; update mcpgo.go", serving, ok)
	}

	for _, want := range []bool{true, false} {
		srv := server.NewMCPServer("t", "1", server.WithResourceCapabilities(false, want))
		if got, ok := resourcesListChanged(srv); !ok || got != want {
			t.Fatalf("resourcesListChanged: %v, ok %v, want %v: mcp-go moved the resources capability; update mcpgo.go", got, ok, want)
		}
	}
	if got, ok := resourcesListChanged(server.NewMCPServer("t", "1")); !ok || got {
		t.Fatalf("resourcesListChanged without the capability: %v, ok %v", got, ok)
	}

	srv = server.NewMCPServer("t", "1")
	if wrapped, ok := wrappedAlready(srv); !ok || wrapped {
		t.Fatalf("wrappedAlready of a new server: %v, ok %v: mcp-go moved its completion provider; update mcpgo.go", wrapped, ok)
	}
	Wrap(srv)
	if wrapped, ok := wrappedAlready(srv); !ok || !wrapped {
		t.Fatalf("wrappedAlready of a wrapped server: %v, ok %v: mcp-go moved its completion provider; update mcpgo.go", wrapped, ok)
	}
}
