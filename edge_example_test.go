package adapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// PageArgs are the arguments of the examples' customers_index: optional
// integers, so they make the query of app://customers_index{?page,per_page}.
type PageArgs struct {
	Page    *int `json:"page,omitempty"`
	PerPage *int `json:"per_page,omitempty"`
}

// Validate names every argument that is wrong.
func (a PageArgs) Validate() error {
	var errs adapter.ValidationError
	if a.Page != nil && *a.Page < 1 {
		errs.Add("page", "must be at least 1")
	}
	if a.PerPage != nil && (*a.PerPage < 1 || *a.PerPage > 100) {
		errs.Add("per_page", "must be between 1 and 100")
	}
	return errs.Err()
}

// exampleAdapter is a server with one live command.
func exampleAdapter() (*server.MCPServer, *adapter.Adapter) {
	srv := server.NewMCPServer("shop", "1.0.0")
	a := adapter.Wrap(srv)
	adapter.Live(a, "customers_index", "A page of customers.",
		func(_ context.Context, args PageArgs) ([]string, error) {
			return []string{"Ada Lovelace"}, nil
		})
	return srv, a
}

// A request of protocol version 2026-07-28 carries its version and the
// client's capabilities in _meta.
const exampleRead = `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{` +
	`"uri":"app://customers_index?page=0&per_page=500",` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`

// Serve Streamable HTTP through the adapter's edge to answer reads with the
// exact error: -32602 with every failing field in data.errors, and, for
// protocol version 2026-07-28, the HTTP status that goes with it.
func ExampleAdapter_HTTPHandler() {
	srv, a := exampleAdapter()
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	ts := httptest.NewServer(mux) // in production: http.ListenAndServe(addr, mux)
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(exampleRead))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "resources/read")
	req.Header.Set("Mcp-Name", "app://customers_index?page=0&per_page=500")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status)
	fmt.Print(string(body))
	// Output:
	// 400 Bad Request
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid arguments: page: must be at least 1; per_page: must be between 1 and 100","data":{"errors":[{"field":"page","message":"must be at least 1"},{"field":"per_page","message":"must be between 1 and 100"}]}}}
}

// Serve stdio through the adapter's edge; a server process passes os.Stdin,
// os.Stdout and a context that ends on SIGINT or SIGTERM.
func ExampleAdapter_ServeStdio() {
	_, a := exampleAdapter()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- a.ServeStdio(context.Background(), inR, outW) }()

	fmt.Fprintln(inW, strings.Replace(exampleRead, "page=0&per_page=500", "per_page=500", 1))
	line, _ := bufio.NewReader(outR).ReadString('\n')
	fmt.Print(line)

	inW.Close() // end of input: ServeStdio returns
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid arguments: per_page: must be between 1 and 100","data":{"errors":[{"field":"per_page","message":"must be between 1 and 100"}]}}}
}

// HandleMessage is the seam for a transport of your own: it answers one
// message as the adapter's edges do.
func ExampleAdapter_HandleMessage() {
	_, a := exampleAdapter()
	read := func(uri string) {
		msg := strings.Replace(exampleRead, "app://customers_index?page=0&per_page=500", uri, 1)
		resp := a.HandleMessage(context.Background(), json.RawMessage(msg))
		b, _ := json.Marshal(resp)
		var r struct {
			Result *struct {
				Contents []struct{ URI, Text string }
			}
			Error json.RawMessage
		}
		json.Unmarshal(b, &r)
		if r.Result != nil {
			fmt.Println(r.Result.Contents[0].URI, r.Result.Contents[0].Text)
			return
		}
		fmt.Println(string(r.Error))
	}
	read("app://customers_index?per_page=2")
	read("app://customers_index?page=two")
	read("app://customers_index?colour=red")
	read("app://orders_index")
	// Output:
	// app://customers_index?per_page=2 ["Ada Lovelace"]
	// {"code":-32602,"message":"invalid arguments: page: must be an integer","data":{"errors":[{"field":"page","message":"must be an integer"}]}}
	// {"code":-32602,"message":"resource not found: app://customers_index?colour=red: unknown query parameter \"colour\"","data":{"uri":"app://customers_index?colour=red"}}
	// {"code":-32602,"message":"resource not found: app://orders_index","data":{"uri":"app://orders_index"}}
}

// A server process serving Streamable HTTP at addr. (Compiled, not run.)
func ExampleAdapter_HTTPHandler_listen() {
	srv, a := exampleAdapter()
	addr := "127.0.0.1:8080"

	httpSrv := server.NewStreamableHTTPServer(srv) // any options of yours
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.HTTPHandler(httpSrv))
	log.Fatal(http.ListenAndServe(addr, mux))
}

// A server process serving its standard streams until SIGINT or SIGTERM.
// (Compiled, not run.)
func ExampleAdapter_ServeStdio_process() {
	_, a := exampleAdapter()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := a.ServeStdio(ctx, os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// On a server reached by name from a network (not loopback), list its
// names: a request for any other Host is refused before it reaches mcp-go,
// which stops DNS rebinding, where a page's own name is both its Origin and
// the Host it asks for.
func ExampleWithAllowedHosts() {
	srv, a := exampleAdapter()
	h := a.HTTPHandler(server.NewStreamableHTTPServer(srv), adapter.WithAllowedHosts("mcp.internal"))
	ts := httptest.NewServer(h)
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(exampleRead))
	req.Host = "rebound.example:8080"
	req.Header.Set("Origin", "http://rebound.example:8080")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, strings.TrimSpace(string(body)))
	// Output:
	// 403 {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"host \"rebound.example:8080\" is not allowed"}}
}
