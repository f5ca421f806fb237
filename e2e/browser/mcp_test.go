package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// mcpClient speaks just enough MCP over Streamable HTTP (protocol
// 2025-11-25, with a session) to subscribe and to call a tool: a page
// under test needs an agent to watch.
type mcpClient struct {
	url     string
	http    *http.Client
	session string
	nextID  int
	streams sync.WaitGroup // readers of GET streams
}

const legacyVersion = "2025-11-25"

func newMCPClient(t *testing.T, url string) *mcpClient {
	c := &mcpClient{url: url, http: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		c.streams.Wait()
		c.http.CloseIdleConnections()
	})
	return c
}

func (c *mcpClient) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", legacyVersion)
	}
	return req, nil
}

// call sends a request and returns its result, failing the test on an
// error answer.
func (c *mcpClient) call(t *testing.T, ctx context.Context, method string, params any) json.RawMessage {
	t.Helper()
	c.nextID++
	id := c.nextID
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := c.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	if s := res.Header.Get("Mcp-Session-Id"); s != "" && c.session == "" {
		c.session = s
	}
	raw, err := responseOf(res, id)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("%s: %v in %s", method, err, raw)
	}
	if msg.Error != nil {
		t.Fatalf("%s: error %d %s", method, msg.Error.Code, msg.Error.Message)
	}
	return msg.Result
}

// responseOf reads the JSON-RPC response with the given id from a JSON
// body or from an event stream.
func responseOf(res *http.Response, id int) ([]byte, error) {
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, b)
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return io.ReadAll(res.Body)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			ID *int `json:"id"`
		}
		if json.Unmarshal([]byte(data), &m) == nil && m.ID != nil && *m.ID == id {
			return []byte(data), nil
		}
	}
	return nil, fmt.Errorf("the event stream ended without the response (%v)", sc.Err())
}

// initialize opens the session.
func (c *mcpClient) initialize(t *testing.T, ctx context.Context) {
	t.Helper()
	c.call(t, ctx, "initialize", map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "browser-e2e", "version": "1"},
	})
	if c.session == "" {
		t.Fatal("initialize answered no Mcp-Session-Id")
	}
	body := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := c.newRequest(ctx, http.MethodPost, body)
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", res.StatusCode)
	}
}

// listen opens the session's GET stream and returns the URIs of the
// notifications/resources/updated it carries. The stream ends with ctx.
func (c *mcpClient) listen(t *testing.T, ctx context.Context) <-chan string {
	t.Helper()
	req, _ := c.newRequest(ctx, http.MethodGet, nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		t.Fatalf("GET stream: HTTP %d", res.StatusCode)
	}
	updated := make(chan string, 16)
	c.streams.Add(1)
	go func() {
		defer c.streams.Done()
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var n struct {
				Method string `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			if json.Unmarshal([]byte(data), &n) == nil && n.Method == "notifications/resources/updated" {
				select {
				case updated <- n.Params.URI:
				default: // the test reads one; more are not its business
				}
			}
		}
	}()
	return updated
}
