package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// rawSession is a legacy Streamable HTTP session spoken by hand, so that a
// test decides exactly when a GET stream opens and closes.
type rawSession struct {
	t   *testing.T
	url string
	id  string
	seq int
}

func newRawSession(t *testing.T, url string) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: url}
	res := s.post(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw", "version": "1"},
	}})
	s.id = res.Header.Get(server.HeaderKeySessionID)
	if s.id == "" {
		t.Fatal("initialize: no session id")
	}
	s.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

func (s *rawSession) request(method string, body io.Reader) *http.Request {
	req, err := http.NewRequest(method, s.url, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if s.id != "" {
		req.Header.Set(server.HeaderKeySessionID, s.id)
	}
	return req
}

// post sends msg and reads the whole response.
func (s *rawSession) post(msg map[string]any) *http.Response {
	s.t.Helper()
	b, _ := json.Marshal(msg)
	req := s.request(http.MethodPost, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		s.t.Fatalf("%v: %s %s", msg["method"], res.Status, body)
	}
	if bytes.Contains(body, []byte(`"error"`)) {
		s.t.Fatalf("%v: %s", msg["method"], body)
	}
	return res
}

// call sends a request and fails the test on an error response.
func (s *rawSession) call(method string, params map[string]any) {
	s.t.Helper()
	s.seq++
	s.post(map[string]any{"jsonrpc": "2.0", "id": s.seq, "method": method, "params": params})
}

func (s *rawSession) delete() {
	s.t.Helper()
	res, err := http.DefaultClient.Do(s.request(http.MethodDelete, nil))
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
}

// rawStream is an open GET stream.
type rawStream struct {
	t      *testing.T
	cancel context.CancelFunc
	body   io.ReadCloser
	uris   chan string
	done   chan struct{}
}

// openStream opens a GET stream and reads its resources/updated
// notifications in the background.
func (s *rawSession) openStream() *rawStream {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res, err := http.DefaultClient.Do(s.request(http.MethodGet, nil).WithContext(ctx))
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		s.t.Fatalf("GET: %s", res.Status)
	}
	g := &rawStream{t: s.t, cancel: cancel, body: res.Body, uris: make(chan string, 64), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var n mcp.JSONRPCNotification
			if json.Unmarshal([]byte(data), &n) == nil && n.Method == mcp.MethodNotificationResourceUpdated {
				uri, _ := n.Params.AdditionalFields["uri"].(string)
				g.uris <- uri
			}
		}
	}()
	s.t.Cleanup(g.close)
	return g
}

// next waits for the next notification's URI.
func (g *rawStream) next() string {
	g.t.Helper()
	select {
	case u := <-g.uris:
		return u
	case <-time.After(10 * time.Second):
		g.t.Fatal("no notification within 10 s")
	}
	return ""
}

func (g *rawStream) close() {
	g.cancel()
	g.body.Close()
	<-g.done
}
