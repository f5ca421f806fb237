// Command readme is the whole server shown in README.md, kept here so that
// it compiles; a test checks that README.md shows it verbatim.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/mark3labs/mcp-go/server"
	"github.com/mcplive/adapter"
)

type ShowArgs struct {
	ID int64 `json:"id"` // required, so a path segment: app://customers_show/{id}
}

type Customer struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func main() {
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_show", "One customer.",
		func(ctx context.Context, args ShowArgs) (Customer, error) {
			adapter.Reads(ctx, fmt.Sprintf("customers/%d", args.ID))
			if args.ID != 12 {
				return Customer{}, adapter.ErrNotFound // resource-not-found on a read
			}
			return Customer{ID: 12, Name: "Ada Lovelace"}, nil
		})
	http.Handle("/mcp", a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	// Listen first, so that a taken port ends the program here, with
	// status 1 and why, before it says that it serves.
	ln, err := net.Listen("tcp", "127.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	log.Print("serving MCP on http://127.0.0.1:8080/mcp")
	log.Fatal(http.Serve(ln, nil))
}
