package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/middleware"
)

// userKey carries, in a request's context, the user that bearerAuth found.
type userKey struct{}

// bearerAuth is an authentication middleware as an application has one:
// "Authorization: Bearer NAME" signs in NAME; no header is anonymous.
func bearerAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, name))
		}
		next.ServeHTTP(w, r)
	})
}

func userIdentity(ctx context.Context) string {
	name, _ := ctx.Value(userKey{}).(string)
	return name
}

// ownerServer serves the items commands through bearerAuth and HTTPHandler
// with WithIdentity, over loopback, and counts the requests that reach
// mcp-go.
type ownerServer struct {
	url     string
	a       *Adapter
	st      *itemStore
	logs    *syncBuffer
	reached atomic.Int64
}

func newOwnerServer(t *testing.T, opts ...Option) *ownerServer {
	t.Helper()
	o := &ownerServer{st: newItemStore(3), logs: &syncBuffer{}}
	logger := slog.New(slog.NewTextHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.a = newLiveServer(t, o.st, append([]Option{WithIdentity(userIdentity), WithLogger(logger)}, opts...)...)
	streamable := server.NewStreamableHTTPServer(o.a.Server(), server.WithSessionIdManager(&server.InsecureStatefulSessionIdManager{}))
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.reached.Add(1)
		streamable.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(bearerAuth(o.a.HTTPHandler(counted)))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = o.a.Close(context.Background())
	})
	o.url = hs.URL + "/mcp"
	return o
}

// ownerReply is one answer, whole.
type ownerReply struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request as user ("" for none) on session ("" for none),
// with body for a POST; a 2026-07-28 POST gets that era's headers.
func (o *ownerServer) do(t *testing.T, method, user, session, body string) ownerReply {
	t.Helper()
	// Bounded, so that an answer that does not end (a GET stream served
	// to whoever asks) fails the test rather than hold it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := o.send(t, ctx, method, user, session, body)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s as %q: %d, reading the answer: %v", method, user, res.StatusCode, err)
	}
	return ownerReply{status: res.StatusCode, header: res.Header, body: data}
}

func (o *ownerServer) send(t *testing.T, ctx context.Context, method, user, session, body string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, o.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
	}
	if strings.Contains(body, mcp.ProtocolVersion20260728) {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal([]byte(body), &m)
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		for k, v := range mcp.StandardHeaders(mcp.ProtocolVersion20260728, mcp.MCPMethod(m.Method), m.Params) {
			req.Header.Set(k, v)
		}
	} else {
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20251125)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// open opens a legacy session as user and returns its ID.
func (o *ownerServer) open(t *testing.T, user string) string {
	t.Helper()
	r := o.do(t, http.MethodPost, user, "", legacyInit)
	id := r.header.Get(server.HeaderKeySessionID)
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("initialize as %q: %d %q, session %q", user, r.status, r.body, id)
	}
	if r := o.do(t, http.MethodPost, user, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %q", r.status, r.body)
	}
	return id
}

// rpc is a legacy request's body.
func rpc(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
}

// events reads the data of an event stream into a channel, closed when
// the stream ends.
func events(body io.ReadCloser) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		defer body.Close()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				ch <- data
			}
		}
	}()
	return ch
}

// awaitEvent reads ev until an event that contains want, and fails at the
// deadline or the stream's end.
func awaitEvent(t *testing.T, ev <-chan string, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case data, ok := <-ev:
			if !ok {
				t.Fatalf("the stream ended before an event with %s", want)
			}
			if strings.Contains(data, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no event with %s within 10 s", want)
		}
	}
}

// TestSessionBelongsToItsOpener: with WithIdentity, a legacy session
// serves only the identity that opened it. Another user's requests on it,
// and anonymous ones, are answered exactly as a session the server does
// not know (mcp-go's answer to a POST with an unknown session ID), reach
// nothing behind the edge, are logged without the identities and counted;
// the owner's session, subscriptions and stream go on as before.
func TestSessionBelongsToItsOpener(t *testing.T) {
	o := newOwnerServer(t)
	ada := o.open(t, "ada")
	stream := o.send(t, context.Background(), http.MethodGet, "ada", ada, "")
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("Ada's GET stream: %d", stream.StatusCode)
	}
	adaEvents := events(stream.Body)
	for i, uri := range []string{"app://items_show/1", "app://items_show/2"} {
		if r := o.do(t, http.MethodPost, "ada", ada, rpc(10+i, "resources/subscribe", `{"uri":"`+uri+`"}`)); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"result"`)) {
			t.Fatalf("Ada subscribes %s: %d %s", uri, r.status, r.body)
		}
	}

	unknown := o.do(t, http.MethodPost, "ada", "mcp-session-00000000-0000-4000-8000-000000000000", rpc(2, "tools/list", "{}"))
	if unknown.status != http.StatusNotFound {
		t.Fatalf("a POST with an unknown session answers %d %q, want mcp-go's 404", unknown.status, unknown.body)
	}
	requests := []struct{ name, method, body string }{
		{"read", http.MethodPost, rpc(3, "resources/read", `{"uri":"app://items_show/1"}`)},
		{"unsubscribe", http.MethodPost, rpc(4, "resources/unsubscribe", `{"uri":"app://items_show/1"}`)},
		{"tools/list", http.MethodPost, rpc(5, "tools/list", "{}")},
		{"notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}}`},
		{"GET stream", http.MethodGet, ""},
		{"DELETE", http.MethodDelete, ""},
	}
	reached := o.reached.Load()
	refused := 0
	for _, who := range []string{"kurt", ""} {
		for _, req := range requests {
			t.Run(fmt.Sprintf("%s as %q", req.name, who), func(t *testing.T) {
				r := o.do(t, req.method, who, ada, req.body)
				refused++
				if r.status != unknown.status || !bytes.Equal(r.body, unknown.body) ||
					r.header.Get("Content-Type") != unknown.header.Get("Content-Type") ||
					r.header.Get("X-Content-Type-Options") != unknown.header.Get("X-Content-Type-Options") {
					t.Errorf("answered %d %q %v, want what an unknown session gets: %d %q %v",
						r.status, r.body, r.header, unknown.status, unknown.body, unknown.header)
				}
			})
		}
	}
	if n := o.reached.Load() - reached; n != 0 {
		t.Errorf("%d of the refused requests reached mcp-go", n)
	}
	if got := o.a.LiveStats().ForeignSessionRequests; got != uint64(refused) {
		t.Errorf("LiveStats.ForeignSessionRequests = %d, want %d", got, refused)
	}
	logs := string(o.logs.bytes())
	if n := strings.Count(logs, "another identity opened"); n != refused {
		t.Errorf("%d refusals logged, want %d:\n%s", n, refused, logs)
	}
	for _, secret := range []string{`\bada\b`, `\bkurt\b`, regexp.QuoteMeta(ada)} {
		if regexp.MustCompile(secret).MatchString(logs) {
			t.Errorf("the log names %q:\n%s", secret, logs)
		}
	}

	// The owner's session is as it was: both subscriptions notify her.
	if s := o.a.LiveStats(); s.Subscriptions != 2 {
		t.Errorf("Ada's session holds %d subscriptions after the refused requests, want 2", s.Subscriptions)
	}
	o.st.set(1, "v2")
	o.a.Changed("items/1")
	awaitEvent(t, adaEvents, `"uri":"app://items_show/1"`)
	if r := o.do(t, http.MethodPost, "ada", ada, rpc(20, "resources/read", `{"uri":"app://items_show/1"}`)); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`v2`)) {
		t.Errorf("Ada reads on her session: %d %s", r.status, r.body)
	}
	if r := o.do(t, http.MethodDelete, "ada", ada, ""); r.status != http.StatusOK {
		t.Errorf("Ada's DELETE: %d %s", r.status, r.body)
	}
	if _, bound := o.a.owners.owner(ada); bound {
		t.Error("the ended session's owner is still kept")
	}
}

// TestAnonymousSessionServesNoIdentity: a session opened without an
// identity serves requests without one, and refuses a signed-in user, who
// would otherwise run requests as herself in a session that anyone who
// knows its ID can listen to.
func TestAnonymousSessionServesNoIdentity(t *testing.T) {
	o := newOwnerServer(t)
	anon := o.open(t, "")
	if r := o.do(t, http.MethodPost, "", anon, rpc(2, "tools/list", "{}")); r.status != http.StatusOK {
		t.Errorf("anonymous tools/list on an anonymous session: %d %s", r.status, r.body)
	}
	if r := o.do(t, http.MethodPost, "ada", anon, rpc(3, "tools/list", "{}")); r.status != http.StatusNotFound {
		t.Errorf("Ada's tools/list on an anonymous session: %d %s, want 404", r.status, r.body)
	}
	// An initialize names no session: mcp-go opens a new one, whatever
	// ID the request carries, and it is the new one's opener's.
	r := o.do(t, http.MethodPost, "kurt", anon, legacyInit)
	kurt := r.header.Get(server.HeaderKeySessionID)
	if r.status != http.StatusOK || kurt == "" || kurt == anon {
		t.Fatalf("Kurt's initialize carrying another session's ID: %d %s, session %q", r.status, r.body, kurt)
	}
	if owner, _ := o.a.owners.owner(kurt); owner != "kurt" {
		t.Errorf("the session Kurt opened belongs to %q", owner)
	}
}

// TestSessionsWithoutIdentityFunction: without WithIdentity, sessions
// belong to no one, as before: any request that names one is served.
func TestSessionsWithoutIdentityFunction(t *testing.T) {
	st := newItemStore(1)
	a := newLiveServer(t, st)
	hs := httptest.NewServer(bearerAuth(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server()))))
	t.Cleanup(hs.Close)
	o := &ownerServer{url: hs.URL, a: a}
	ada := o.open(t, "ada")
	if r := o.do(t, http.MethodPost, "kurt", ada, rpc(2, "tools/list", "{}")); r.status != http.StatusOK {
		t.Errorf("without an identity function, another token's request answers %d", r.status)
	}
	if len(a.owners.m) != 0 {
		t.Errorf("owners kept without an identity function: %v", a.owners.m)
	}
}

// TestIdentityFunctionPanics: a request whose identity cannot be decided
// is refused, whatever it is: it could belong to anyone.
func TestIdentityFunctionPanics(t *testing.T) {
	st := newItemStore(1)
	a := newLiveServer(t, st, WithIdentity(func(context.Context) string { panic("no directory") }),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	hs := httptest.NewServer(a.HTTPHandler(server.NewStreamableHTTPServer(a.Server())))
	t.Cleanup(hs.Close)
	o := &ownerServer{url: hs.URL}
	r := o.do(t, http.MethodPost, "", "", legacyInit)
	if r.status != http.StatusInternalServerError || r.header.Get(server.HeaderKeySessionID) != "" {
		t.Errorf("initialize with a panicking identity function: %d %s, session %q", r.status, r.body, r.header.Get(server.HeaderKeySessionID))
	}
}

// listenBody is a 2026-07-28 subscriptions/listen of uris with id.
func listenBody(id int, uris ...string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": uris},
		"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientCapabilities: map[string]any{},
			mcp.MetaKeyClientInfo:         map[string]any{"name": "t", "version": "1"},
		},
	}})
	return string(b)
}

// cancelBody is a 2026-07-28 notifications/cancelled of request id.
func cancelBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"_meta":{%q:%q}}}`,
		id, mcp.MetaKeyProtocolVersion, mcp.ProtocolVersion20260728)
}

// drain reads ev to its end, within 10 s, and returns what it carried.
func drain(t *testing.T, ev <-chan string) []string {
	t.Helper()
	var got []string
	deadline := time.After(10 * time.Second)
	for {
		select {
		case data, ok := <-ev:
			if !ok {
				return got
			}
			got = append(got, data)
		case <-deadline:
			t.Fatalf("the stream did not end within 10 s; it carried %q", got)
		}
	}
}

// TestStatelessCancelIsTheSendersOwn: on 2026-07-28 every listen has the
// session ID "", and clients pick their request IDs alike. A
// notifications/cancelled ends its sender's listen with that ID, which is
// not answered afterwards, and never another identity's.
func TestStatelessCancelIsTheSendersOwn(t *testing.T) {
	o := newOwnerServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listen := func(user string) <-chan string {
		res := o.send(t, ctx, http.MethodPost, user, "", listenBody(1, "app://items_show/1"))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s's listen: %d", user, res.StatusCode)
		}
		ev := events(res.Body)
		awaitEvent(t, ev, mcp.MethodNotificationSubscriptionsAcknowledged)
		return ev
	}
	ada, kurt := listen("ada"), listen("kurt")
	if r := o.do(t, http.MethodPost, "kurt", "", cancelBody(1)); r.status != http.StatusAccepted {
		t.Fatalf("Kurt's cancel: %d %s", r.status, r.body)
	}
	if rest := drain(t, kurt); len(rest) != 0 {
		t.Errorf("Kurt's cancelled listen went on with %q, want nothing: not even its result", rest)
	}
	o.st.set(1, "v2")
	o.a.Changed("items/1")
	awaitEvent(t, ada, `"uri":"app://items_show/1"`)

	if r := o.do(t, http.MethodPost, "ada", "", cancelBody(1)); r.status != http.StatusAccepted {
		t.Fatalf("Ada's cancel: %d %s", r.status, r.body)
	}
	if rest := drain(t, ada); len(rest) != 0 {
		t.Errorf("Ada's cancelled listen went on with %q, want nothing", rest)
	}
	waitEmpty(t, o.a)
}

// TestClientCapCountsAnIdentity: with WithIdentity, the cap across
// connections counts one identity's subscriptions together, on every
// session it opens, and another identity's apart; WithClientKey, given,
// says who a client is instead.
func TestClientCapCountsAnIdentity(t *testing.T) {
	subscribe := func(o *ownerServer, user, session, uri string) string {
		r := o.do(t, http.MethodPost, user, session, rpc(9, "resources/subscribe", `{"uri":"`+uri+`"}`))
		return string(r.body)
	}
	o := newOwnerServer(t, WithClientSubscriptionCap(2))
	ada1, ada2, kurt := o.open(t, "ada"), o.open(t, "ada"), o.open(t, "kurt")
	for _, s := range []struct{ user, session, uri string }{
		{"ada", ada1, "app://items_show/1"}, {"ada", ada2, "app://items_show/2"}, {"kurt", kurt, "app://items_show/1"},
	} {
		if body := subscribe(o, s.user, s.session, s.uri); !strings.Contains(body, `"result"`) {
			t.Fatalf("%s subscribes %s: %s", s.user, s.uri, body)
		}
	}
	if body := subscribe(o, "ada", ada1, "app://items_show/3"); !strings.Contains(body, "per client") {
		t.Errorf("Ada's third subscription, over two sessions: %s, want refused per client", body)
	}
	if body := subscribe(o, "kurt", kurt, "app://items_show/3"); !strings.Contains(body, `"result"`) {
		t.Errorf("Kurt's second subscription: %s, want it made", body)
	}

	bySession := newOwnerServer(t, WithClientSubscriptionCap(2), WithClientKey(func(_ context.Context, call *middleware.Call) string {
		return call.Session.SessionID()
	}))
	ada1, ada2 = bySession.open(t, "ada"), bySession.open(t, "ada")
	for _, s := range []struct{ session, uri string }{{ada1, "app://items_show/1"}, {ada2, "app://items_show/2"}, {ada2, "app://items_show/3"}} {
		if body := subscribe(bySession, "ada", s.session, s.uri); !strings.Contains(body, `"result"`) {
			t.Errorf("keyed by session, Ada subscribes %s: %s", s.uri, body)
		}
	}
}

func TestOwnersRequestParsers(t *testing.T) {
	for _, tc := range []struct {
		body       string
		initialize bool
		cancelled  string
		cancels    bool
		id         string
		listen     bool
	}{
		{body: legacyInit, initialize: true, id: `1`},
		{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{body: `{"jsonrpc":"2.0","id":"a","method":"initiali\u007ae"}`, initialize: true, id: `"a"`},
		{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, cancelled: `7`, cancels: true},
		{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`, cancelled: `"x"`, cancels: true},
		{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, cancels: true},
		{body: `{"jsonrpc":"2.0","method":"notifications\/cancelled","params":{"requestId":3}}`, cancelled: `3`, cancels: true},
		// A request is not a notification, whatever its method says.
		{body: `{"jsonrpc":"2.0","id":2,"method":"notifications/cancelled","params":{"requestId":3}}`, id: `2`},
		{body: `{"jsonrpc":"2.0","ID":2,"method":"notifications/cancelled","params":{"requestId":3}}`, id: `2`},
		{body: listenBody(5, "app://x"), id: `5`, listen: true},
		{body: `{"jsonrpc":"2.0","id":null,"method":"subscriptions/listen"}`},
		{body: `not json`},
	} {
		if got := isInitialize([]byte(tc.body)); got != tc.initialize {
			t.Errorf("isInitialize(%s) = %v", tc.body, got)
		}
		// IDs as JSON in the table, keyed as idKey keys them.
		key := func(raw string) string {
			if raw == "" {
				return ""
			}
			return idKey(json.RawMessage(raw))
		}
		if id, ok := cancelledRequestID([]byte(tc.body)); id != key(tc.cancelled) || ok != tc.cancels {
			t.Errorf("cancelledRequestID(%s) = %q, %v; want %q, %v", tc.body, id, ok, key(tc.cancelled), tc.cancels)
		}
		if id, listen := requestID([]byte(tc.body)); id != key(tc.id) || listen != tc.listen {
			t.Errorf("requestID(%s) = %q, %v; want %q, %v", tc.body, id, listen, key(tc.id), tc.listen)
		}
	}
}
