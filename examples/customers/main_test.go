package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestClient serves the example's MCP server to mcp-go's in-process
// client, initialized on the given protocol version ("" for mcp-go's
// default, the newest).
func newTestClient(t *testing.T, version string) (*client.Client, *adapter.Adapter) {
	t.Helper()
	a := newAdapter(newTestStore(t), quietLogger())
	var opts []client.ClientOption
	if version != "" {
		opts = append(opts, client.WithProtocolVersion(version))
	}
	c, err := client.NewInProcessClientWithOptions(a.Server(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "customers-test", Version: "0"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c, a
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func text(t *testing.T, contents any) string {
	t.Helper()
	switch c := contents.(type) {
	case mcp.TextContent:
		return c.Text
	case mcp.TextResourceContents:
		return c.Text
	}
	t.Fatalf("content %T, want text", contents)
	return ""
}

func readResource(t *testing.T, c *client.Client, uri string) (string, error) {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(t.Context(), req)
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	return text(t, res.Contents[0]), nil
}

func TestMCP(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+cmp.Or(version, "newest"), func(t *testing.T) {
			c, _ := newTestClient(t, version)

			tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			want := []string{"customers_by_ids", "customers_create", "customers_export", "customers_index",
				"customers_show", "customers_update", "orders_between", "orders_create"}
			if !slices.Equal(names, want) {
				t.Errorf("tools %q, want %q", names, want)
			}

			res := callTool(t, c, "customers_index", map[string]any{"search": "ada"})
			if res.IsError {
				t.Fatalf("customers_index: %s", text(t, res.Content[0]))
			}
			var page IndexResult
			if err := json.Unmarshal([]byte(text(t, res.Content[0])), &page); err != nil {
				t.Fatal(err)
			}
			if page.Total != 1 || page.Customers[0].Name != "Ada Lovelace" {
				t.Errorf("search ada: %+v", page)
			}

			res = callTool(t, c, "customers_index", map[string]any{"per_page": 0, "page": 0})
			if !res.IsError || !strings.Contains(text(t, res.Content[0]), "per_page") || !strings.Contains(text(t, res.Content[0]), "page") {
				t.Errorf("per_page=0, page=0: %+v, want an error naming both", res)
			}

			templates, err := c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, tmpl := range templates.ResourceTemplates {
				uris = append(uris, tmpl.URITemplate.Raw())
			}
			wantURIs := []string{
				"app://customers_index{?direction,page,per_page,search,sort}",
				"app://customers_show/{id}",
				"app://orders_between/{from}/{to}{?status}",
			}
			if !slices.Equal(uris, wantURIs) {
				t.Errorf("templates %q, want %q", uris, wantURIs)
			}

			body, err := readResource(t, c, "app://customers_index?sort=created_at&search=ada")
			if err != nil || !strings.Contains(body, "Ada Lovelace") {
				t.Errorf("read customers_index: %s, %v", body, err)
			}
			body, err = readResource(t, c, "app://customers_show/1")
			if err != nil || !strings.Contains(body, "ada.lovelace@example.com") {
				t.Errorf("read customers_show/1: %s, %v", body, err)
			}
			if _, err := readResource(t, c, "app://customers_show/9999"); err == nil {
				t.Error("read customers_show/9999 succeeded, want resource not found")
			}
			body, err = readResource(t, c, "app://orders_between/2024-01-01/2024-01-31?status=open")
			if err != nil || !strings.Contains(body, "total_amount_cents") {
				t.Errorf("read orders_between: %s, %v", body, err)
			}
		})
	}
}

// TestWatch subscribes on the legacy protocol (the simplest client code) and
// checks that the example's writes report what they change: a write that
// changes a watched result notifies its subscriber once; one that does not
// stays silent.
func TestWatch(t *testing.T) {
	c, a := newTestClient(t, "2025-11-25")
	updated := make(chan string, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			updated <- uri
		}
	})
	const search, show = "app://customers_index?search=ada", "app://customers_show/2"
	for _, uri := range []string{search, show} {
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		if err := c.Subscribe(t.Context(), req); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}

	// Writes that change neither result come first. Re-runs of one query
	// happen in order, so a wrong notification would arrive before the
	// right one below.
	callTool(t, c, "customers_create", map[string]any{"name": "Zora Neale", "email": "zora@example.com"})
	callTool(t, c, "customers_update", map[string]any{"id": 3, "name": "Rear Admiral Grace Hopper"})

	callTool(t, c, "customers_create", map[string]any{"name": "Ada Byron", "email": "byron@example.com"})
	if got := next(t, updated); got != search {
		t.Errorf("notified %s, want %s", got, search)
	}
	callTool(t, c, "customers_update", map[string]any{"id": 2, "name": "Alan M. Turing"})
	if got := next(t, updated); got != show {
		t.Errorf("notified %s, want %s", got, show)
	}

	// Nothing else: once the adapter has re-run everything and handed out
	// every notification, give the client a moment to deliver a stray one.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		t.Errorf("one notification too many: %s", uri)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestWireErrors checks what an agent sees when arguments are wrong, with
// adaptertest, which reports the exact JSON-RPC error of the wire.
func TestWireErrors(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		var opts []adaptertest.Option
		if legacy {
			opts = append(opts, adaptertest.Legacy())
		}
		c := adaptertest.New(t, newAdapter(newTestStore(t), quietLogger()), opts...)
		t.Run(c.Version(), func(t *testing.T) {
			// One answer names every bad field, whether the schema's bounds
			// or the conversion of the URI's strings found it.
			for query, want := range map[string][]string{
				"per_page=0&page=0":   {"page", "per_page"},
				"sort=email&page=two": {"page", "sort"},
			} {
				_, err := c.Read("app://customers_index?" + query)
				var werr *adaptertest.WireError
				if !errors.As(err, &werr) || werr.Code != mcp.INVALID_PARAMS {
					t.Fatalf("%s: %v, want -32602", query, err)
				}
				var fields []string
				for _, fe := range werr.FieldErrors() {
					fields = append(fields, fe.Field)
				}
				slices.Sort(fields)
				if !slices.Equal(fields, want) {
					t.Errorf("%s: fields in error.data %q, want %q", query, fields, want)
				}
			}

			var werr *adaptertest.WireError
			_, err := c.Read("app://orders_between/2024-02-01/2024-01-01")
			if !errors.As(err, &werr) || len(werr.FieldErrors()) != 1 || werr.FieldErrors()[0].Field != "to" {
				t.Errorf("from after to: %v, want a field error on to", err)
			}

			_, err = c.Read("app://customers_show/9999")
			if !errors.As(err, &werr) || werr.URI() != "app://customers_show/9999" {
				t.Errorf("unknown customer: %v, want resource not found", err)
			}

			res, err := c.Complete("app://customers_index{?direction,page,per_page,search,sort}", "sort", "cr", nil)
			if err != nil || !slices.Equal(res.Completion.Values, []string{"created_at"}) {
				t.Errorf("complete sort=cr: %+v, %v", res, err)
			}
		})
	}
}

func next(t *testing.T, updated <-chan string) string {
	t.Helper()
	select {
	case uri := <-updated:
		return uri
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/resources/updated within 5s")
		return ""
	}
}

func TestInspect(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), config{inspect: true}, nil, &out, quietLogger()); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	for _, want := range []string{
		"app://customers_index{?direction,page,per_page,search,sort}",
		"app://customers_show/{id}",
		"app://orders_between/{from}/{to}{?status}",
		"customers_export", "customers_by_ids", "customers_create",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the -inspect report does not mention %s:\n%s", want, report)
		}
	}
}

func TestFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-addr", "127.0.0.1:0", "-db", "shop.db", "-stdio"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg != (config{addr: "127.0.0.1:0", dbPath: "shop.db", feed: "notify", stdio: true}) {
		t.Errorf("parsed %+v", cfg)
	}
	if cfg, _ := parseFlags(nil, io.Discard); cfg.addr != "127.0.0.1:8080" || cfg.dbPath != "" {
		t.Errorf("defaults %+v", cfg)
	}
	if _, err := parseFlags([]string{"-nope"}, io.Discard); err == nil {
		t.Error("an unknown flag was accepted")
	}
	if cfg, err := parseFlags([]string{"-trusted-proxy", "127.0.0.1,10.0.0.0/8"}, io.Discard); err != nil || cfg.trustedProxies != "127.0.0.1,10.0.0.0/8" {
		t.Errorf("-trusted-proxy: %+v, %v", cfg, err)
	}
	var out strings.Builder
	if _, err := parseFlags([]string{"-trusted-proxy", "lb.internal"}, &out); err == nil || !strings.Contains(out.String(), `"lb.internal"`) {
		t.Errorf("-trusted-proxy lb.internal: %v, said %q; want an error naming it", err, out.String())
	}
	if cfg, err := parseFlags([]string{"-kept-mib", "0"}, io.Discard); err != nil || cfg.keptMiB == nil || *cfg.keptMiB != 0 {
		t.Errorf("-kept-mib 0: %+v, %v", cfg, err)
	}
	out.Reset()
	if _, err := parseFlags([]string{"-kept-mib", "-1"}, &out); err == nil || !strings.Contains(out.String(), "-kept-mib -1") {
		t.Errorf("-kept-mib -1: %v, said %q; want an error naming it", err, out.String())
	}
}

// -kept-mib 0 turns kept results off: every re-read runs its command.
func TestKeptMiBZeroKeepsNothing(t *testing.T) {
	for _, args := range [][]string{nil, {"-kept-mib", "0"}} {
		cfg, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := openInstance(t.Context(), cfg, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		c := adaptertest.New(t, inst.a)
		if _, err := c.Listen("app://customers_show/1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read("app://customers_show/1"); err != nil {
			t.Fatal(err)
		}
		want := uint64(1) // the default keeps
		if len(args) > 0 {
			want = 0
		}
		if got := inst.a.LiveStats().KeptAnswers; got != want {
			t.Errorf("%q: %d reads answered from kept results, want %d", args, got, want)
		}
		if err := inst.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestStdio runs main's stdio mode on pipes: the protocol on stdout, nothing
// else, and a clean exit when the client closes stdin.
func TestStdio(t *testing.T) {
	stdin, toServer := io.Pipe()
	fromServer, stdout := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), config{stdio: true}, stdin, stdout, quietLogger())
		stdout.Close()
	}()

	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"app://customers_show/1"}}`,
	} {
		if _, err := io.WriteString(toServer, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	dec := json.NewDecoder(fromServer)
	for {
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := dec.Decode(&resp); err != nil {
			t.Fatalf("stdout is not a stream of JSON-RPC messages: %v", err)
		}
		if resp.ID == 2 {
			if !strings.Contains(string(resp.Result), "Ada Lovelace") {
				t.Errorf("read customers_show/1: %s", resp.Result)
			}
			break
		}
	}
	toServer.Close()
	go io.Copy(io.Discard, fromServer) // let the server finish writing
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run -stdio: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run -stdio did not return after stdin closed")
	}
}

// TestHTTP serves on a free port, waits for /healthz and stops the server
// the way SIGINT does, by ending the context.
func TestHTTP(t *testing.T) {
	mcpURL, _ := startHTTP(t) // stops it, and checks it stopped, when the test ends
	url := strings.TrimSuffix(mcpURL, "/mcp")
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "ok" {
				t.Fatalf("/healthz: %d %q, want 200 ok", resp.StatusCode, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz did not answer within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A real MCP client over HTTP, for good measure.
	c, err := client.NewStreamableHttpClient(url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "customers-test", Version: "0"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	body, err := readResource(t, c, "app://customers_index?search=%61da") // %61 is "a"
	if err != nil || !strings.Contains(body, "Ada Lovelace") {
		t.Errorf("read over HTTP: %s, %v", body, err)
	}

	// The exact error on the wire: the adapter's HTTPHandler at work.
	const uri = "app://customers_index?per_page=0"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`","_meta":{`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
			`"io.modelcontextprotocol/clientCapabilities":{},`+
			`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"0"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "resources/read")
	req.Header.Set("Mcp-Name", uri)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Errors []adapter.FieldError `json:"errors"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("read %s over HTTP: %v: %s", uri, err, raw)
	}
	if answer.Error.Code != mcp.INVALID_PARAMS || len(answer.Error.Data.Errors) != 1 || answer.Error.Data.Errors[0].Field != "per_page" {
		t.Errorf("read %s over HTTP: %s, want -32602 with a field error on per_page", uri, raw)
	}

}
