package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestGetStreamResumes drives the example as shipped over real HTTP: a
// session subscribes to customer 1, hears one rename on its GET stream,
// stops reading while a second rename is written into it, and loses the
// connection (TCP reset). Its next GET stream, with Last-Event-ID, hears the
// second rename first, and goes on with new ones.
func TestGetStreamResumes(t *testing.T) {
	url, inst := startInstance(t)
	session := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20251125}
	status, hdr, body := rawPOST(t, url, initLegacy, session)
	if status != http.StatusOK {
		t.Fatalf("initialize: %d %s", status, body)
	}
	session[server.HeaderKeySessionID] = hdr.Get(server.HeaderKeySessionID)
	id := 10
	post := func(method, params string) {
		t.Helper()
		id++
		if status, _, body := rawPOST(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params), session); status != http.StatusOK || strings.Contains(body, `"error"`) {
			t.Fatalf("%s: %d %s", method, status, body)
		}
	}
	rename := func(name string) {
		post("tools/call", fmt.Sprintf(`{"name":"customers_update","arguments":{"id":1,"name":%q}}`, name))
	}
	post("resources/subscribe", `{"uri":"app://customers_show/1"}`)

	first := openStream(t, url, session, "")
	rename("Ada one")
	seen := first.next(t)
	if seen == "" {
		t.Fatal("the first rename's notification has no event id")
	}
	rename("Ada two")
	// Its notification is written into the stream, and never read.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := inst.a.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	first.reset()

	second := openStream(t, url, session, seen)
	if got := second.next(t); got == "" || got == seen {
		t.Fatalf("resumed after %s: event id %q; want the lost notification, with an id of its own", seen, got)
	}
	rename("Ada three")
	if got := second.next(t); got == "" {
		t.Fatal("the resumed stream does not go on")
	}
}

// exampleStream is a GET stream of the example, read from its connection.
type exampleStream struct {
	conn net.Conn
	r    *bufio.Reader
}

func openStream(t *testing.T, url string, header map[string]string, lastID string) *exampleStream {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req := "GET /mcp HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\n"
	for k, v := range header {
		req += k + ": " + v + "\r\n"
	}
	if lastID != "" {
		req += "Last-Event-ID: " + lastID + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusOK || res.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("GET stream: %v %v; want 200 with X-Accel-Buffering: no", res, err)
	}
	return &exampleStream{conn: conn, r: bufio.NewReader(res.Body)}
}

// next reads to the next notifications/resources/updated of customer 1
// and returns its event id.
func (s *exampleStream) next(t *testing.T) string {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var id, data string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the GET stream: %v", err)
		}
		switch line = strings.TrimRight(line, "\r\n"); {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			var n struct {
				Method string `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			_ = json.Unmarshal([]byte(data), &n)
			if n.Method == "notifications/resources/updated" && n.Params.URI == "app://customers_show/1" {
				return id
			}
			id, data = "", ""
		}
	}
}

// reset ends the connection with a TCP reset: what it had not read is lost.
func (s *exampleStream) reset() {
	if tc, ok := s.conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	s.conn.Close()
}
