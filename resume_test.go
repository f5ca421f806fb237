package adapter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mcplive/adapter/internal/digest"
)

func TestEventStore(t *testing.T) {
	ctx := context.Background()
	s := NewEventStore(3)
	var ids []string
	for i, stream := range []string{"a", "b", "a", "a"} {
		id, err := s.StoreEvent(ctx, "s1", stream, json.RawMessage(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := s.StoreEvent(ctx, "s2", "a", json.RawMessage("9")); err != nil {
		t.Fatal(err)
	}
	replay := func(session, after string) (string, []string, error) {
		var got []string
		stream, err := s.ReplayEventsAfter(ctx, session, after, func(id string, msg json.RawMessage) error {
			got = append(got, id+"="+string(msg))
			return nil
		})
		return stream, got, err
	}
	for _, tc := range []struct {
		name, session, after string
		stream               string
		want                 []string
		unknown              bool
	}{
		{"after the first of a", "s1", ids[2], "a", []string{ids[3] + "=3"}, false},
		{"the other stream's events are not replayed", "s1", ids[1], "b", nil, false},
		{"the oldest is gone: three kept per session", "s1", ids[0], "", nil, true},
		{"another session's id", "s2", ids[2], "", nil, true},
		{"not an id", "s1", "x", "", nil, true},
		{"never issued", "s1", "424242", "", nil, true},
	} {
		stream, got, err := replay(tc.session, tc.after)
		if tc.unknown != errors.Is(err, server.ErrUnknownEventID) || stream != tc.stream || !slices.Equal(got, tc.want) {
			t.Errorf("%s: stream %q, replayed %q, error %v; want %q, %q, unknown %v", tc.name, stream, got, err, tc.stream, tc.want, tc.unknown)
		}
	}
	if err := s.PurgeSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay("s1", ids[3]); !errors.Is(err, server.ErrUnknownEventID) {
		t.Errorf("after PurgeSession, replay: %v, want an unknown id", err)
	}
}

// sseClient is a legacy Streamable HTTP session spoken by hand over real
// HTTP, with GET streams read line by line from their connection.
type sseClient struct {
	t       *testing.T
	url     string
	session string
	id      int
}

func newSSEClient(t *testing.T, url string) *sseClient {
	c := &sseClient{t: t, url: url}
	res := c.post(`"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	c.session = res.Header.Get(server.HeaderKeySessionID)
	if c.session == "" {
		t.Fatalf("initialize: no session id (status %d)", res.StatusCode)
	}
	c.post(`"method":"notifications/initialized"`)
	return c
}

// post sends one message (its members after jsonrpc and id) and reads the
// answer whole.
func (c *sseClient) post(members string) *http.Response {
	c.t.Helper()
	c.id++
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, c.id, members)
	if strings.Contains(members, `"notifications/`) {
		body = `{"jsonrpc":"2.0",` + members + `}`
	}
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set(server.HeaderKeySessionID, c.session)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode >= 300 || strings.Contains(string(b), `"error"`) {
		c.t.Fatalf("%s: status %d, %s", body, res.StatusCode, b)
	}
	return res
}

// sseStream is an open GET stream on a connection of its own.
type sseStream struct {
	conn   net.Conn
	r      *bufio.Reader
	header http.Header
}

// open opens a GET stream, resuming after lastID when it is not "".
func (c *sseClient) open(lastID string) *sseStream {
	c.t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(c.url, "/mcp"), "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	req := fmt.Sprintf("GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\n%s: 2025-11-25\r\n",
		host, server.HeaderKeySessionID, c.session, mcp.HeaderProtocolVersion)
	if lastID != "" {
		req += "Last-Event-ID: " + lastID + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		c.t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		c.t.Fatalf("GET stream: %v %v", res, err)
	}
	return &sseStream{conn: conn, r: bufio.NewReader(res.Body), header: res.Header}
}

// event reads the next event (comments skipped unless comments is set),
// within 10 s: its id and its notification's URI, or the comment.
func (s *sseStream) event(t *testing.T, comments bool) (id, uri string) {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var data string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && data != "":
			var n struct {
				Method string `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			_ = json.Unmarshal([]byte(data), &n)
			if n.Method != "notifications/resources/updated" {
				id, data = "", "" // a ping of mcp-go's
				continue
			}
			return id, n.Params.URI
		case strings.HasPrefix(line, ":") && comments:
			return "", line
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// reset ends the stream's connection with a TCP reset, as a broken network
// or a killed proxy does: what it had not read is lost.
func (s *sseStream) reset() {
	if tc, ok := s.conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	s.conn.Close()
}

func resumeServer(t *testing.T, opts ...HTTPOption) (*Adapter, *itemStore, string) {
	t.Helper()
	st := newItemStore(3)
	a := newLiveServer(t, st)
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server()), opts...))
	t.Cleanup(hs.Close)
	t.Cleanup(hs.CloseClientConnections)
	return a, st, hs.URL + "/mcp"
}

// A GET stream that breaks after a notification was written into it but
// not read resumes with Last-Event-ID: the notification comes again, first,
// and the stream goes on with new ones.
func TestGetStreamResumesAfterALostNotification(t *testing.T) {
	a, st, url := resumeServer(t)
	c := newSSEClient(t, url)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/1"}`)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/2"}`)
	first := c.open("")
	if got := first.header.Get("X-Accel-Buffering"); got != "no" {
		t.Errorf("GET stream: X-Accel-Buffering %q, want no", got)
	}

	st.set(1, "one")
	a.Changed("items/1")
	seen, uri := first.event(t, false)
	if seen == "" || uri != "app://items_show/1" {
		t.Fatalf("first change: id %q, uri %q; want an id and items_show/1", seen, uri)
	}
	// Written into the stream, never read: the reset loses it.
	st.set(2, "two")
	a.Changed("items/2")
	waitIdle(t, a)
	first.reset()

	second := c.open(seen)
	if id, uri := second.event(t, false); id == "" || id == seen || uri != "app://items_show/2" {
		t.Fatalf("resumed after %s: id %q, uri %q; want the lost items_show/2 with its id", seen, id, uri)
	}
	st.set(1, "one again")
	a.Changed("items/1")
	if id, uri := second.event(t, false); id == "" || uri != "app://items_show/1" {
		t.Fatalf("after the resume: id %q, uri %q; want the new items_show/1", id, uri)
	}
}

// A Last-Event-ID the store does not know (too old, or from elsewhere)
// cannot say what the client missed: every subscription of the session is
// notified, so that the client re-reads everything it watches.
func TestGetStreamUnknownEventIDCatchesUp(t *testing.T) {
	_, _, url := resumeServer(t)
	c := newSSEClient(t, url)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/1"}`)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_count"}`)
	s := c.open("987654321")
	var got []string
	for range 2 {
		_, uri := s.event(t, false)
		got = append(got, uri)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"app://items_count", "app://items_show/1"}) {
		t.Errorf("after an unknown Last-Event-ID: heard %q, want every subscription once", got)
	}
}

// An idle GET stream and an idle listen stream carry SSE comments, so that
// proxies keep them open, and never inside an event.
func TestIdleStreamsCarryKeepAlives(t *testing.T) {
	_, _, url := resumeServer(t, WithKeepAlive(20*time.Millisecond))
	c := newSSEClient(t, url)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/1"}`)
	get := c.open("")
	for range 3 {
		if _, line := get.event(t, true); line != ": keep-alive" {
			t.Fatalf("idle GET stream: %q, want the keep-alive comment", line)
		}
	}

	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(listenRequest(1, []string{"app://items_show/1"}))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, string(mcp.MethodSubscriptionsListen))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if got := res.Header.Get("X-Accel-Buffering"); got != "no" {
		t.Errorf("listen stream: X-Accel-Buffering %q, want no", got)
	}
	r := bufio.NewReader(res.Body)
	comments, acked := 0, false
	for comments < 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("listen stream: %v after %d comments", err, comments)
		}
		switch {
		case strings.HasPrefix(line, ": keep-alive"):
			comments++
		case strings.Contains(line, "subscriptions/acknowledged"):
			acked = true
		}
	}
	if !acked {
		t.Error("listen stream: keep-alives before the acknowledgement")
	}
}

// readVersion reads uri on f's session, in the era of modern, and returns
// the version its result's _meta carries.
func readVersion(t *testing.T, f *fakeClient, uri string, modern bool) string {
	t.Helper()
	_, v, rerr := readAnswer(t, f, uri, modern)
	if rerr != nil || v == "" {
		t.Fatalf("read %s: version %q, %+v; want a version in _meta", uri, v, rerr)
	}
	return v
}

// A client that names the version it last saw of each URI hears at once of
// those whose result has another version now, and of no other; the
// versions its notifications carry are those a read then shows.
func TestNamedVersions(t *testing.T) {
	for _, modern := range []bool{false, true} {
		t.Run(fmt.Sprint("modern=", modern), func(t *testing.T) {
			st := newItemStore(3)
			a := newLiveServer(t, st)
			reader := newFakeClient(t, a, "reader", 16)
			const same, changed = "app://items_show/1", "app://items_show/2"
			seen := map[string]string{same: readVersion(t, reader, same, modern), changed: readVersion(t, reader, changed, modern)}
			if seen[same] == seen[changed] {
				t.Fatalf("two different results share the version %s", seen[same])
			}
			st.set(2, "changed while away")

			f := newFakeClient(t, a, "back", 16)
			if modern {
				raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": map[string]any{
					"notifications": map[string]any{"resourceSubscriptions": []string{same, changed}},
					"_meta": map[string]any{
						mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
						mcp.MetaKeyClientCapabilities: map[string]any{},
						mcp.MetaKeyClientInfo:         map[string]any{"name": "fake", "version": "1"},
						MetaVersions:                  seen,
					},
				}})
				ctx, cancel := context.WithCancel(f.ctx())
				f.streams = append(f.streams, cancel)
				f.wg.Add(1)
				go func() { defer f.wg.Done(); f.a.HandleMessage(ctx, raw) }()
			} else {
				for _, uri := range []string{same, changed} {
					if e := f.call("resources/subscribe", map[string]any{"uri": uri, "_meta": map[string]any{MetaVersion: seen[uri]}}); e != nil {
						t.Fatalf("subscribe %s: %+v", uri, e)
					}
				}
			}
			var heard []note
			var version any
			deadline := time.After(10 * time.Second)
			for len(heard) == 0 {
				select {
				case n := <-f.s.ch:
					if x, ok := noteOf(n); ok {
						heard = append(heard, x)
						version = n.Params.Meta[MetaVersion]
					}
				case <-deadline:
					t.Fatal("no notification for the URI that changed while away")
				}
			}
			waitIdle(t, a)
			heard = append(heard, f.notes()...)
			if len(heard) != 1 || heard[0].uri != changed {
				t.Fatalf("heard %+v; want %s alone", heard, changed)
			}
			if now := readVersion(t, reader, changed, modern); version != now || now == seen[changed] {
				t.Errorf("the notification says version %v, a read then %s (before %s); want the read's, a new one", version, now, seen[changed])
			}
		})
	}
}

// Over Streamable HTTP, a listen naming an old version hears of it right
// after the acknowledgement, never before it.
func TestNamedVersionsAfterTheAcknowledgement(t *testing.T) {
	a, st, url := resumeServer(t)
	reader := newFakeClient(t, a, "reader", 16)
	const uri = "app://items_show/1"
	old := readVersion(t, reader, uri, true)
	st.set(1, "changed while away")
	methods := listenMethods(t, url, []string{uri}, map[string]string{uri: old}, 2)
	if !slices.Equal(methods, []string{"notifications/subscriptions/acknowledged", "notifications/resources/updated"}) {
		t.Errorf("the listen stream began with %q; want the acknowledgement, then the URI that changed", methods)
	}
}

// An acknowledgement too long for the edge to hold (it lists every URI of
// the listen) still releases what waited for it, right after its end.
func TestNamedVersionsAfterALongAcknowledgement(t *testing.T) {
	a, st, url := resumeServer(t)
	reader := newFakeClient(t, a, "reader", 16)
	const uri = "app://items_show/1"
	old := readVersion(t, reader, uri, true)
	st.set(1, "changed while away")
	uris := []string{uri}
	for i := 0; len(uris)*1000 < 2*maxRewrite; i++ {
		// URIs of others, kept in the acknowledgement as they are.
		uris = append(uris, fmt.Sprintf("other://long/%d/%s", i, strings.Repeat("x", 1000)))
	}
	methods := listenMethods(t, url, uris, map[string]string{uri: old}, 2)
	if !slices.Equal(methods, []string{"notifications/subscriptions/acknowledged", "notifications/resources/updated"}) {
		t.Errorf("the listen stream began with %q; want the long acknowledgement, then the URI that changed", methods)
	}
}

// Under a subscription cap above the default, a listen naming more stale
// versions than the default cap still hears every one after the
// acknowledgement.
func TestNamedVersionsAfterTheAcknowledgementUnderARaisedCap(t *testing.T) {
	const n = DefaultSubscriptionCap + 16
	st := newItemStore(n)
	a := newLiveServer(t, st, WithSubscriptionCap(2*n))
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	t.Cleanup(hs.Close)
	t.Cleanup(hs.CloseClientConnections)
	reader := newFakeClient(t, a, "reader", 16)
	var uris []string
	seen := map[string]string{}
	for id := 1; id <= n; id++ {
		uri := fmt.Sprintf("app://items_show/%d", id)
		uris = append(uris, uri)
		seen[uri] = readVersion(t, reader, uri, true)
		st.set(id, "changed while away")
	}
	methods := listenMethods(t, hs.URL+"/mcp", uris, seen, n+1)
	if methods[0] != "notifications/subscriptions/acknowledged" {
		i := slices.Index(methods, "notifications/subscriptions/acknowledged")
		t.Errorf("%d of %d URIs that changed were told before the acknowledgement; want none", i, n)
	}
}

// listenMethods sends a 2026-07-28 subscriptions/listen of uris through the
// HTTP edge at url, naming the versions seen, and returns the methods of
// the first n messages on its stream (within 10 s).
func listenMethods(t *testing.T, url string, uris []string, seen map[string]string, n int) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": uris},
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "fake", "version": "1"},
			MetaVersions:                  seen,
		},
	}})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, string(mcp.MethodSubscriptionsListen))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	var methods []string
	for len(methods) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("listen stream: %v after %q", err, methods)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal([]byte(data), &m)
			methods = append(methods, m.Method)
		}
	}
	return methods
}

// prime reads the event a GET stream begins with, an id and no data, and
// returns its id.
func (s *sseStream) prime(t *testing.T) string {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var id string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		switch line = strings.TrimRight(line, "\r\n"); {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case line == "" && id != "":
			return id
		case strings.HasPrefix(line, "data: ") && line != "data: ":
			t.Fatalf("the stream began with data %q, want the priming event", line)
		}
	}
}

// A GET stream begins with an event that has an id and no data, so that a
// stream that breaks before its first notification resumes too: the
// notification written into it, unread, comes again on the next.
func TestGetStreamResumesBeforeItsFirstNotification(t *testing.T) {
	a, st, url := resumeServer(t)
	c := newSSEClient(t, url)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/1"}`)
	first := c.open("")
	primed := first.prime(t)
	st.set(1, "one")
	a.Changed("items/1")
	waitIdle(t, a) // written into the stream, never read
	first.reset()

	second := c.open(primed)
	if id, uri := second.event(t, false); id == "" || uri != "app://items_show/1" {
		t.Fatalf("resumed after the priming event %s: id %q, uri %q; want the lost items_show/1", primed, id, uri)
	}
}

// A resumed stream does not bring back the notification of a subscription
// that ended since it was written: the client unsubscribed, and hears
// nothing more of that URI, as on a stream that never broke.
func TestGetStreamResumeSkipsEndedSubscriptions(t *testing.T) {
	a, st, url := resumeServer(t)
	c := newSSEClient(t, url)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/1"}`)
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/2"}`)
	first := c.open("")
	primed := first.prime(t)
	st.set(1, "one")
	a.Changed("items/1")
	waitIdle(t, a) // written into the stream, never read
	c.post(`"method":"resources/unsubscribe","params":{"uri":"app://items_show/1"}`)
	first.reset()

	second := c.open(primed)
	st.set(2, "two")
	a.Changed("items/2")
	if _, uri := second.event(t, false); uri != "app://items_show/2" {
		t.Fatalf("resumed after unsubscribing items_show/1: heard %q first; want items_show/2, the one still subscribed", uri)
	}
}

// newlineStore is an event store whose ids would end an SSE line.
type newlineStore struct{ server.EventStore }

func (newlineStore) StoreEvent(context.Context, string, string, json.RawMessage) (string, error) {
	return "7\ndata: forged", nil
}

// An event id that would end its line (a store's, not the adapter's) is
// left out rather than written: it could forge an event.
func TestEventIDThatWouldEndItsLine(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/event-stream")
	gs := newGetStream(rec, rec, "s", getStreamConfig{store: newlineStore{NewEventStore(0)}, timeout: time.Second, onOpen: func(*getStream) {}})
	gs.WriteHeader(http.StatusOK)
	if err := gs.writeEvent([]byte(`{"jsonrpc":"2.0"}`), nil); err != nil {
		t.Fatal(err)
	}
	if body := rec.Body.String(); strings.Contains(body, "forged") || strings.Contains(body, "id:") {
		t.Errorf("the stream carries %q; want events without the store's id", body)
	}
}

// A session told of more changes at once than one write carries
// (streamChunk) hears each, once, every one with an id of its own, in
// order.
func TestGetStreamLongBurst(t *testing.T) {
	const n = 450 // some 40 KB of notifications
	st := newItemStore(n)
	a := newLiveServer(t, st, WithSubscriptionCap(n), WithClientSubscriptionCap(n))
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	t.Cleanup(hs.Close)
	t.Cleanup(hs.CloseClientConnections)
	c := newSSEClient(t, hs.URL+"/mcp")
	s := c.open("")
	keys := make([]string, n)
	for i := range n {
		c.post(fmt.Sprintf(`"method":"resources/subscribe","params":{"uri":"app://items_show/%d"}`, i+1))
		st.set(i+1, "v2")
		keys[i] = fmt.Sprintf("items/%d", i+1)
	}
	a.Changed(keys...)
	seen := make(map[string]bool)
	last := uint64(0)
	for range n {
		id, uri := s.event(t, false)
		seq, err := strconv.ParseUint(id, 10, 64)
		if err != nil || seq <= last {
			t.Fatalf("event id %q after %d: want a larger number", id, last)
		}
		if seen[uri] {
			t.Fatalf("%s notified twice", uri)
		}
		seen[uri], last = true, seq
	}
}

// A legacy subscription that named the version it last saw hears, on its
// GET stream, the version its notification announces.
func TestGetStreamNotificationCarriesItsVersion(t *testing.T) {
	_, _, url := resumeServer(t)
	c := newSSEClient(t, url)
	s := c.open("")
	c.post(`"method":"resources/subscribe","params":{"uri":"app://items_show/1","_meta":{"` + MetaVersion + `":"not-what-it-is"}}`)
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || !strings.Contains(data, "notifications/resources/updated") {
			continue
		}
		var n struct {
			Params struct {
				URI  string         `json:"uri"`
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(data), &n); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if v, _ := n.Params.Meta[MetaVersion].(string); n.Params.URI != "app://items_show/1" || v == "" || v == "not-what-it-is" {
			t.Errorf("the notification %s; want items_show/1 with its current version", data)
		}
		return
	}
}

// A version is the digest's two words in hexadecimal, 16 digits each,
// whatever their leading zeros.
func TestVersionText(t *testing.T) {
	tests := []struct {
		d    digest.Digest
		want string
	}{
		{digest.Digest{0, 0}, "00000000000000000000000000000000"},
		{digest.Digest{1, 2}, "00000000000000010000000000000002"},
		{digest.Digest{0xdeadbeef, 0xffffffffffffffff}, "00000000deadbeefffffffffffffffff"},
	}
	for _, tt := range tests {
		if got := versionText(tt.d); got != tt.want {
			t.Errorf("versionText(%x) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
