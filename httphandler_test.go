package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mcplive/adapter"
)

// edgeHTTPClient speaks raw Streamable HTTP, so that tests see the whole
// error object (mcp-go's client drops error.data).
type edgeHTTPClient struct {
	t       *testing.T
	url     string
	era     edgeEra
	session string
	nextID  int
}

// edgeHTTPReply is what one POST answered.
type edgeHTTPReply struct {
	status      int
	contentType string
	events      int // events of an event stream
	resp        edgeResponse
	header      http.Header
}

// newEdgeHTTPClient connects to url; on the legacy era it initializes a
// session first.
func newEdgeHTTPClient(t *testing.T, url string, era edgeEra) *edgeHTTPClient {
	t.Helper()
	c := &edgeHTTPClient{t: t, url: url, era: era}
	if !era.modern() {
		r := c.post(string(mcp.MethodInitialize), edgeInitializeParams(era))
		if r.resp.Error != nil {
			t.Fatalf("initialize: %+v", r.resp.Error)
		}
		c.session = r.header.Get(server.HeaderKeySessionID)
		if c.session == "" {
			t.Fatal("initialize: no Mcp-Session-Id")
		}
		c.send(nil, string(mcp.MethodNotificationInitialized), nil)
	}
	return c
}

// post sends a request and returns its response.
func (c *edgeHTTPClient) post(method string, params map[string]any) edgeHTTPReply {
	c.t.Helper()
	c.nextID++
	return c.send(c.nextID, method, params)
}

// send POSTs one message; id nil sends a notification.
func (c *edgeHTTPClient) send(id any, method string, params map[string]any) edgeHTTPReply {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		msg["id"] = id
	}
	var rawParams []byte
	if method != string(mcp.MethodInitialize) {
		params = edgeRequestParams(c.era, params)
	}
	if params != nil {
		msg["params"] = params
		rawParams, _ = json.Marshal(params)
	}
	body, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.era.modern() {
		req.Header.Set(mcp.HeaderProtocolVersion, c.era.version)
		for k, v := range mcp.StandardHeaders(c.era.version, mcp.MCPMethod(method), rawParams) {
			req.Header.Set(k, v)
		}
	} else if c.session != "" {
		req.Header.Set(server.HeaderKeySessionID, c.session)
		req.Header.Set(mcp.HeaderProtocolVersion, c.era.version)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	r := edgeHTTPReply{status: res.StatusCode, header: res.Header}
	r.contentType, _, _ = mime.ParseMediaType(res.Header.Get("Content-Type"))
	switch r.contentType {
	case "application/json":
		if err := json.Unmarshal(data, &r.resp); err != nil {
			c.t.Fatalf("%s: body %q: %v", method, data, err)
		}
	case "text/event-stream":
		for _, ev := range strings.Split(string(data), "\n\n") {
			if strings.TrimSpace(ev) == "" {
				continue
			}
			r.events++
			for _, line := range strings.Split(ev, "\n") {
				payload, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				var m edgeResponse
				if err := json.Unmarshal([]byte(payload), &m); err != nil {
					c.t.Fatalf("%s: event data %q: %v", method, payload, err)
				}
				if m.Method == "" && m.ID != nil {
					r.resp = m
				}
			}
		}
	default:
		if id != nil {
			c.t.Fatalf("%s: status %d, Content-Type %q, body %q", method, res.StatusCode, r.contentType, data)
		}
	}
	return r
}

// read sends resources/read.
func (c *edgeHTTPClient) read(uri string) edgeHTTPReply {
	c.t.Helper()
	return c.post(string(mcp.MethodResourcesRead), map[string]any{"uri": uri})
}

// edgeHTTPServer serves srv over loopback through the adapter's edge when a
// wraps it, or through plain mcp-go.
func edgeHTTPServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func TestHTTPHandlerAnswersExactErrors(t *testing.T) {
	srv, a := edgeApp(t)
	url := edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			c := newEdgeHTTPClient(t, url, era)
			for _, tc := range edgeCases {
				t.Run(tc.name, func(t *testing.T) {
					r := c.read(tc.uri)
					edgeRun(t, era, tc, r.resp.Result, r.resp.Error)
					wantStatus := http.StatusOK
					if era.modern() && r.contentType == "application/json" && r.resp.Error != nil && r.resp.Error.Code == mcp.INVALID_PARAMS {
						// 2026-07-28 maps -32602 to 400, as mcp-go does for its own.
						wantStatus = http.StatusBadRequest
					}
					if r.status != wantStatus {
						t.Errorf("status = %d, want %d", r.status, wantStatus)
					}
					// mcp-go answers with an event stream once the handler
					// notified; the notification itself may be dropped by
					// mcp-go when the response overtakes it.
					if tc.name == "event stream" && r.contentType != "text/event-stream" {
						t.Errorf("Content-Type %q, want an event stream", r.contentType)
					}
				})
			}
		})
	}
}

func TestHTTPHandlerUngrantedLooksMissing(t *testing.T) {
	srv, a := edgeApp(t)
	url := edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			c := newEdgeHTTPClient(t, url, era)
			u := c.read("app://items_secret/1")
			m := c.read("app://items_nope/1")
			if u.status != m.status {
				t.Errorf("status %d for an ungranted command, %d for a missing one", u.status, m.status)
			}
			ub, _ := json.Marshal(u.resp.Error)
			mb, _ := json.Marshal(m.resp.Error)
			edgeIndistinguishable(t, string(ub), "app://items_secret/1", string(mb), "app://items_nope/1")
		})
	}
}

func TestHTTPHandlerLeavesUserResourcesAlone(t *testing.T) {
	srv, a := edgeApp(t)
	url := edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			c := newEdgeHTTPClient(t, url, era)
			for uri, want := range map[string]string{
				"app://readme":      "read me",
				"files://notes.txt": "file files://notes.txt",
			} {
				r := c.read(uri)
				if r.resp.Error != nil {
					t.Fatalf("read %s: %+v", uri, r.resp.Error)
				}
				var res mcp.ReadResourceResult
				raw := r.resp.Result
				got, err := mcp.ParseReadResourceResult(&raw)
				if err != nil {
					t.Fatal(err)
				}
				res = *got
				text, ok := res.Contents[0].(mcp.TextResourceContents)
				if !ok || text.Text != want || text.URI != uri {
					t.Errorf("read %s = %+v, want text %q", uri, res.Contents[0], want)
				}
			}
		})
	}
}

func TestHTTPHandlerPutsRemoteAddrInContext(t *testing.T) {
	srv, a := edgeApp(t)
	url := edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	c := newEdgeHTTPClient(t, url, edgeEras[0])
	r := c.read("app://whoami")
	if r.resp.Error != nil {
		t.Fatal(r.resp.Error)
	}
	var res struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	if err := json.Unmarshal(r.resp.Result, &res); err != nil || len(res.Contents) != 1 {
		t.Fatalf("result %s: %v", r.resp.Result, err)
	}
	if !strings.HasPrefix(res.Contents[0].Text, `"127.0.0.1:`) {
		t.Errorf("the command saw remote address %s, want 127.0.0.1:port", res.Contents[0].Text)
	}
}

// Without the edge a read still answers its exact error: mcp-go sends a
// handler's error made with server.NewHandlerError as it is. Only
// mcp-go's own not-found, for a URI no command owns, keeps mcp-go's form.
func TestPlainStreamableHTTPAnswersExactReadErrors(t *testing.T) {
	srv, _ := edgeApp(t)
	url := edgeHTTPServer(t, server.NewStreamableHTTPServer(srv))
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			c := newEdgeHTTPClient(t, url, era)
			ok := c.read("app://items_show/7")
			if ok.resp.Error != nil {
				t.Fatalf("read: %+v", ok.resp.Error)
			}
			edgeCheckResult(t, "app://items_show/7", ok.resp.Result)

			for _, tc := range []struct {
				uri, msg, data string
				code           int
			}{
				{"app://items_index?page=0&per_page=500", "invalid arguments: page: must be at least 1; per_page: must be between 1 and 100", `"errors"`, mcp.INVALID_PARAMS},
				{"app://items_show/404", "resource not found: app://items_show/404", `{"uri":"app://items_show/404"}`, era.notFound},
			} {
				r := c.read(tc.uri)
				e := r.resp.Error
				if e == nil || e.Code != tc.code || e.Message != tc.msg || !strings.Contains(string(e.Data), tc.data) {
					t.Errorf("read %s = %+v, want %d %q with data %s", tc.uri, e, tc.code, tc.msg, tc.data)
				}
				want := http.StatusOK
				if era.modern() {
					want = http.StatusBadRequest // mcp-go's status for -32602 on 2026-07-28
				}
				if r.status != want {
					t.Errorf("read %s: status = %d, want %d", tc.uri, r.status, want)
				}
			}
			// Not found that mcp-go decides itself keeps its code, without data.
			r := c.read("app://items_nope/1")
			if e := r.resp.Error; e == nil || e.Code != era.notFound || len(e.Data) != 0 {
				t.Errorf("read of a missing command = %+v, want %d without data", e, era.notFound)
			}
		})
	}
}

// mcp-go's own client works through the edge on both eras; it reports the
// code (not the data) of the rewritten errors.
func TestHTTPHandlerWithMcpGoClient(t *testing.T) {
	srv, a := edgeApp(t)
	url := edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			tr, err := transport.NewStreamableHTTP(url)
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(tr, client.WithProtocolVersion(era.version))
			defer c.Close()
			ctx := context.Background()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			var init mcp.InitializeRequest
			init.Params.ClientInfo = mcp.Implementation{Name: "edge-test", Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			read := func(uri string) error {
				var req mcp.ReadResourceRequest
				req.Params.URI = uri
				_, err := c.ReadResource(ctx, req)
				return err
			}
			if err := read("app://items_show/7"); err != nil {
				t.Errorf("read: %v", err)
			}
			if err := read("app://items_index?per_page=500"); !errors.Is(err, mcp.ErrInvalidParams) {
				t.Errorf("read with a bad per_page: %v, want invalid params", err)
			}
			if err := read("app://items_show/404"); !errors.Is(err, mcp.ErrResourceNotFound) && !(era.modern() && errors.Is(err, mcp.ErrInvalidParams)) {
				t.Errorf("read of a missing item: %v, want resource not found", err)
			}
			templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			if err != nil || len(templates.ResourceTemplates) != 4 {
				t.Errorf("templates: %d, %v; want the 4 granted (3 of the adapter, files)", len(templates.ResourceTemplates), err)
			}
		})
	}
}

// Request ids come back exactly as the client wrote them, beyond 2^53 and
// beyond int64 too, with the adapter's exact error: a read's (sent as it is
// by mcp-go) and a hook's (swapped in by the edge, keyed by the id).
func TestHTTPHandlerEchoesLargeIDsWithExactErrors(t *testing.T) {
	srv, a := edgeApp(t)
	url := edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	ids := []any{json.Number("9007199254740993"), json.Number("12345678901234567890"), json.Number("-9223372036854775809"), "id-7"}
	for _, era := range edgeEras {
		t.Run(era.name, func(t *testing.T) {
			c := newEdgeHTTPClient(t, url, era)
			for _, id := range ids {
				want, _ := json.Marshal(id)
				r := c.send(id, string(mcp.MethodResourcesRead), map[string]any{"uri": "app://items_index?page=0"})
				if e := r.resp.Error; e == nil || e.Code != mcp.INVALID_PARAMS || !strings.Contains(string(e.Data), `"errors"`) || string(r.resp.ID) != string(want) {
					t.Errorf("read with id %s: id %s, error %+v; want -32602 with data.errors under id %s", want, r.resp.ID, e, want)
				}
				if era.modern() {
					continue
				}
				r = c.send(id, string(mcp.MethodResourcesSubscribe), map[string]any{"uri": "app://items_index?page=x"})
				if e := r.resp.Error; e == nil || e.Code != mcp.INVALID_PARAMS || !strings.Contains(string(e.Data), `"errors"`) || string(r.resp.ID) != string(want) {
					t.Errorf("subscribe with id %s: id %s, error %+v; want -32602 with data.errors under id %s", want, r.resp.ID, e, want)
				}
			}
		})
	}
}

// The adapter's body cap and mcp-go's agree: a body of exactly
// DefaultMaxBodyBytes reaches mcp-go and is answered, one byte more is the
// adapter's 413.
func TestHTTPHandlerBodyCapAgreesWithMCPGo(t *testing.T) {
	srv, a := edgeApp(t)
	url := edgeHTTPServer(t, a.HTTPHandler(server.NewStreamableHTTPServer(srv)))
	era := edgeEras[0]
	version := era.version
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": edgeRequestParams(era, map[string]any{})})
	if err != nil {
		t.Fatal(err)
	}
	msg := string(b)
	for _, tc := range []struct {
		size   int
		status int
	}{
		{adapter.DefaultMaxBodyBytes, http.StatusOK},
		{adapter.DefaultMaxBodyBytes + 1, http.StatusRequestEntityTooLarge},
	} {
		body := msg + strings.Repeat(" ", tc.size-len(msg))
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, version)
		for k, v := range mcp.StandardHeaders(version, mcp.MethodToolsList, nil) {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		reply, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("a body of %d bytes: status %d (%.200s), want %d", tc.size, res.StatusCode, reply, tc.status)
		}
		if tc.status == http.StatusRequestEntityTooLarge && !strings.Contains(string(reply), "request body too large: the limit is") {
			t.Errorf("a body of %d bytes: %s; want the adapter's 413, not mcp-go's", tc.size, reply)
		}
	}
}
