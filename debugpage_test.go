package adapter

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplive/adapter/internal/leakcheck"
)

// hostile is text an application or an agent may put on the page: each
// must arrive as text, never as markup.
const hostile = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`

func newDebugServer(t *testing.T, opts ...Option) (*Adapter, *itemStore) {
	st := newItemStore(300)
	a := newLiveServer(t, st, opts...)
	Live(a, "notes_find", "Finds notes. "+hostile, func(ctx context.Context, args struct {
		Q string `json:"q"`
	}) (string, error) {
		Reads(ctx, "notes/"+hostile)
		return args.Q, nil
	})
	return a, st
}

func get(t *testing.T, url, accept string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestDebugPage(t *testing.T) {
	a, _ := newDebugServer(t)
	f := newFakeClient(t, a, "s1", 16)
	uri := "app://notes_find/" + strings.NewReplacer("<", "%3C", ">", "%3E", `"`, "%22", " ", "%20", "=", "%3D", "(", "%28", ")", "%29", "/", "%2F").Replace(hostile)
	if acked, _ := f.listen(t, uri, "app://items_show/12"); len(acked) != 2 {
		t.Fatalf("acknowledged %q", acked)
	}
	hs := httptest.NewServer(a.DebugHandler())
	defer hs.Close()

	res, page := get(t, hs.URL, "text/html")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	stats := a.LiveStats()
	if stats.Kept == 0 {
		t.Fatalf("%+v: nothing kept", stats)
	}
	for _, want := range []string{
		fmt.Sprintf(`<dd id="kept">%d, %d B</dd>`, stats.Kept, stats.KeptBytes),
		`<td class="kept">` + strconv.Itoa(len(`{"id":12,"name":"v1"}`)) + ` B</td>`,
		`<tr data-command="items_show" data-arguments="{&#34;id&#34;:12}">`,
		`<code>app://items_show/{id}</code>`,
		`<td class="reads"><code>items/12</code></td>`,
		`<dd id="subscriptions">2</dd>`,
		"Finds notes. &lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;",
		`<code>notes/&lt;script&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, "<img") || strings.Count(page, "<script>") != 1 {
		t.Errorf("hostile text became markup:\n%s", page)
	}

	// The one inline script and style are those the policy allows, and
	// nothing is loaded from elsewhere.
	csp := res.Header.Get("Content-Security-Policy")
	for _, tag := range []string{"script", "style"} {
		m := regexp.MustCompile(`(?s)<` + tag + `>(.*?)</` + tag + `>`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no inline %s", tag)
		}
		sum := sha256.Sum256([]byte(m[1]))
		want := tag + "-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if !strings.HasPrefix(csp, "default-src 'none'") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("the page may load from elsewhere: %q", csp)
	}

	if res, _ := get(t, hs.URL, ""); res.StatusCode != 200 {
		t.Errorf("GET without Accept: %d", res.StatusCode)
	}
	post, err := http.Post(hs.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", post.StatusCode)
	}
}

func TestDebugPageBoundsQueries(t *testing.T) {
	a, _ := newDebugServer(t, WithSubscriptionCap(400), WithClientSubscriptionCap(400))
	f := newFakeClient(t, a, "s1", 16)
	uris := make([]string, debugMaxQueries+5)
	for i := range uris {
		uris[i] = fmt.Sprintf("app://items_show/%d", i+1)
	}
	if acked, _ := f.listen(t, uris...); len(acked) != len(uris) {
		t.Fatalf("%d acknowledged", len(acked))
	}
	hs := httptest.NewServer(a.DebugHandler())
	defer hs.Close()
	_, page := get(t, hs.URL, "")
	if n := strings.Count(page, `<tr data-command="items_show" data-arguments=`); n != debugMaxQueries {
		t.Errorf("%d rows, want %d", n, debugMaxQueries)
	}
	if !strings.Contains(page, "and 5 more live queries, not shown") {
		t.Error("the page does not say how many it left out")
	}
}

// eventReader reads server-sent events.
type eventReader struct{ r *bufio.Reader }

// next returns the next event's name and data.
func (e eventReader) next(t *testing.T) (name, data string) {
	t.Helper()
	var lines []string
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && name != "":
			return name, strings.Join(lines, "\n")
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			lines = append(lines, strings.TrimPrefix(line, "data: "))
		}
	}
}

func openStream(t *testing.T, ctx context.Context, url string) (*http.Response, eventReader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res, eventReader{bufio.NewReader(res.Body)}
}

func TestDebugPageStream(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.Current())
	a, st := newDebugServer(t)
	f := newFakeClient(t, a, "s1", 16)
	defer f.close()
	if acked, _ := f.listen(t, "app://items_show/3"); len(acked) != 1 {
		t.Fatal("not acknowledged")
	}
	h := newDebugHandler(a, 5*time.Millisecond, time.Hour)
	hs := httptest.NewServer(h)
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	res, events := openStream(t, ctx, hs.URL)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	name, data := events.next(t)
	if name != "live" || !strings.Contains(data, `<td class="reruns">0</td>`) || strings.Contains(data, "<html") {
		t.Fatalf("first event %s:\n%s", name, data)
	}
	st.set(3, "v2")
	a.Changed("items/3")
	for !strings.Contains(data, `<td class="reruns">1</td>`) || !strings.Contains(data, `<dd id="notified">1</dd>`) {
		name, data = events.next(t)
		if name != "live" {
			t.Fatalf("event %q", name)
		}
	}

	// The streams are bounded; the request's end ends its stream.
	for range debugMaxStreams - 1 {
		openStream(t, ctx, hs.URL)
	}
	if res, _ := get(t, hs.URL, "text/event-stream"); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream beyond the bound: %d, want 503", res.StatusCode)
	}
	cancel()
	hs.Close() // waits for the handlers to return
	if n := len(h.streams); n != 0 {
		t.Errorf("%d streams still held", n)
	}
}

// plainWriter is the writer of a handler in front of the debug page that
// hides everything but http.ResponseWriter's own methods.
type plainWriter struct{ http.ResponseWriter }

// TestDebugPageStreamThatCannotFlush: behind a handler whose writer hides
// http.Flusher, the stream's first event reached the page only when the
// stream ended, at once, and the page reconnected for ever, showing
// nothing. It is refused with 501, which EventSource does not retry, and
// a writer that unwraps to one that flushes still streams.
func TestDebugPageStreamThatCannotFlush(t *testing.T) {
	a, _ := newDebugServer(t)
	h := newDebugHandler(a, 5*time.Millisecond, time.Hour)
	hidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(plainWriter{w}, r)
	}))
	defer hidden.Close()
	res, body := get(t, hidden.URL, "text/event-stream")
	if res.StatusCode != http.StatusNotImplemented || !strings.Contains(body, "flushes") {
		t.Errorf("a stream through a writer that cannot flush: %d %q, want 501 saying why", res.StatusCode, body)
	}
	if n := len(h.streams); n != 0 {
		t.Errorf("%d streams held by a refused request", n)
	}

	unwrapped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(unwrappingWriter{plainWriter{w}}, r)
	}))
	defer unwrapped.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, events := openStream(t, ctx, unwrapped.URL)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a stream through a writer that unwraps to one that flushes: %d, want 200", res.StatusCode)
	}
	if name, _ := events.next(t); name != "live" {
		t.Fatalf("first event %q, want live", name)
	}
}

// unwrappingWriter hides its writer's methods but offers it by Unwrap, as
// http.ResponseController expects of a middleware's writer.
type unwrappingWriter struct{ plainWriter }

func (w unwrappingWriter) Unwrap() http.ResponseWriter { return w.plainWriter.ResponseWriter }

func TestSSEEvent(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"", "event: live\n\n"},
		{"<p>a</p>", "event: live\ndata: <p>a</p>\n\n"},
		{"a\nb\n", "event: live\ndata: a\ndata: b\n\n"},
		{"a\r\nb\rc", "event: live\ndata: a&#13;\ndata: b&#13;c\n\n"},
	} {
		if got := string(sseEvent("live", []byte(tc.data))); got != tc.want {
			t.Errorf("sseEvent(%q) = %q, want %q", tc.data, got, tc.want)
		}
	}
}

// TestDebugPageStreamStalledReader: a page whose client stops reading, its
// connection left open, must not hold its stream, and one of the eight
// places, for as long as the connection lasts: its write is cut short.
func TestDebugPageStreamStalledReader(t *testing.T) {
	a, _ := newDebugServer(t, WithSubscriptionCap(400), WithClientSubscriptionCap(400))
	f := newFakeClient(t, a, "s1", 16)
	uris := make([]string, debugMaxQueries)
	for i := range uris {
		uris[i] = fmt.Sprintf("app://items_show/%d", i+1)
	}
	if acked, _ := f.listen(t, uris...); len(acked) != len(uris) {
		t.Fatalf("%d acknowledged", len(acked))
	}
	// An event of 200 rows every millisecond fills the sockets' small
	// buffers at once.
	h := newDebugHandler(a, time.Millisecond, time.Millisecond)
	h.writeTimeout = 50 * time.Millisecond
	ended := make(chan struct{})
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		h.ServeHTTP(w, r)
	}))
	hs.Listener = smallSendBuffers{hs.Listener}
	hs.Start()
	defer hs.Close()

	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The client never reads.
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream of a client that stopped reading is still held")
	}
	if n := len(h.streams); n != 0 {
		t.Errorf("%d streams still held", n)
	}
}

// smallSendBuffers gives the connections it accepts small send buffers, so
// that a client that does not read blocks the server's writes soon.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// TestDebugPageRefusesRebinding: the page and its stream show the arguments
// of every live query. Mounted on a loopback listener, "where only
// operators reach it", it is reached too by a page on another site whose
// name the attacker rebinds to 127.0.0.1: the operator's own browser
// connects over loopback, with the attacker's name as Host. That must be
// refused, as mcp-go's localhost protection refuses it on /mcp; a loopback
// name, and any Host on a listener that is not loopback, pass.
func TestDebugPageRefusesRebinding(t *testing.T) {
	a, _ := newDebugServer(t)
	f := newFakeClient(t, a, "s1", 16)
	defer f.close()
	if acked, _ := f.listen(t, "app://items_show/3"); len(acked) != 1 {
		t.Fatal("not acknowledged")
	}
	hs := httptest.NewServer(a.DebugHandler())
	defer hs.Close()
	// The same handler, as if its listener were not loopback (httptest
	// listens on loopback only).
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 80}))
		a.DebugHandler().ServeHTTP(w, r.WithContext(ctx))
	}))
	defer public.Close()
	port := hs.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		url, host string
		want      int
	}{
		{hs.URL, fmt.Sprintf("127.0.0.1:%d", port), http.StatusOK},
		{hs.URL, fmt.Sprintf("localhost:%d", port), http.StatusOK},
		{hs.URL, fmt.Sprintf("[::1]:%d", port), http.StatusOK},
		{hs.URL, "localhost", http.StatusOK},
		{hs.URL, "[::1]", http.StatusOK},
		{hs.URL, fmt.Sprintf("evil.example:%d", port), http.StatusForbidden},
		{hs.URL, "evil.example", http.StatusForbidden},
		{hs.URL, fmt.Sprintf("localhost.evil.example:%d", port), http.StatusForbidden},
		{hs.URL, fmt.Sprintf("127.0.0.1.nip.io:%d", port), http.StatusForbidden},
		{hs.URL, fmt.Sprintf("192.0.2.1:%d", port), http.StatusForbidden},
		{public.URL, "debug.example.com", http.StatusOK},
	} {
		for _, accept := range []string{"text/html", "text/event-stream"} {
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tc.url, nil)
			req.Host = tc.host
			req.Header.Set("Accept", accept)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			if res.StatusCode == http.StatusOK && accept == "text/event-stream" {
				name, data := eventReader{bufio.NewReader(res.Body)}.next(t)
				body = []byte(name + " " + data)
			} else {
				body, _ = io.ReadAll(res.Body)
			}
			cancel()
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Errorf("Host %s, %s: %d, want %d", tc.host, accept, res.StatusCode, tc.want)
			}
			if leaked := strings.Contains(string(body), "items_show"); leaked != (tc.want == http.StatusOK) {
				t.Errorf("Host %s, %s: the live queries shown: %v", tc.host, accept, leaked)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(string(body), strconv.Quote(tc.host)) {
				t.Errorf("Host %s, %s: the refusal does not name the host: %s", tc.host, accept, body)
			}
		}
	}
}

// TestDebugPageBoundsReads: a query's read set is as long as what its run
// read, one key a row for a search, say, which its arguments (an agent's)
// may make as long as the table. Like its rows, a page's read keys are
// bounded, and the page says how many it left out, in the page and in the
// stream alike.
func TestDebugPageBoundsReads(t *testing.T) {
	a, _ := newDebugServer(t)
	const n = 5000
	Live(a, "notes_all", "Every note.", func(ctx context.Context, _ struct{}) (int, error) {
		for i := range n {
			Reads(ctx, fmt.Sprintf("notes/%d", i))
		}
		return n, nil
	})
	f := newFakeClient(t, a, "s1", 16)
	defer f.close()
	if acked, _ := f.listen(t, "app://notes_all", "app://items_show/1"); len(acked) != 2 {
		t.Fatalf("acknowledged %q", acked)
	}
	hs := httptest.NewServer(a.DebugHandler())
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, page := get(t, hs.URL, "text/html")
	_, events := openStream(t, ctx, hs.URL)
	_, data := events.next(t)
	for what, text := range map[string]string{"page": page, "stream": data} {
		if got := strings.Count(text, "<code>notes/"); got != debugMaxReads {
			t.Errorf("%s: %d read keys shown, want %d", what, got, debugMaxReads)
		}
		if want := fmt.Sprintf("and %d more", n-debugMaxReads); !strings.Contains(text, want) {
			t.Errorf("%s: it does not say %q", what, want)
		}
		if !strings.Contains(text, `<td class="reads"><code>items/1</code></td>`) {
			t.Errorf("%s: a short read set is not shown whole", what)
		}
	}
}

// TestDebugPageJSON asks the page for application/json over a real HTTP
// server, as a script gathering a fleet would: the same data as the page,
// with every LiveStats field under its JSON name, the queries with their
// scope as the opaque tag only, and the bounds of the page kept. A
// browser's Accept, which asks for HTML first, still gets the page.
func TestDebugPageJSON(t *testing.T) {
	a, _ := newDebugServer(t, WithScope(func(ctx context.Context) (string, error) { return "tenant-secret", nil }))
	const n = 300
	Live(a, "notes_all", "Every note.", func(ctx context.Context, _ struct{}) (int, error) {
		for i := range n {
			Reads(ctx, fmt.Sprintf("notes/%d", i))
		}
		return n, nil
	})
	f := newFakeClient(t, a, "s1", 16)
	defer f.close()
	if acked, _ := f.listen(t, "app://notes_all", "app://items_show/12", "app://items_show/13"); len(acked) != 3 {
		t.Fatalf("acknowledged %q", acked)
	}
	hs := httptest.NewServer(a.DebugHandler())
	defer hs.Close()

	res, body := get(t, hs.URL, "application/json")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("Vary") != "Accept" ||
		res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d, headers %v:\n%s", res.StatusCode, res.Header, body)
	}
	var doc struct {
		Commands []CommandReport `json:"commands"`
		Live     struct {
			Stats   map[string]json.Number `json:"stats"`
			Queries []struct {
				LiveQuery
				MoreReads int `json:"moreReads"`
			} `json:"queries"`
			More int       `json:"more"`
			At   time.Time `json:"at"`
		} `json:"live"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v:\n%s", err, body)
	}
	stats := reflect.TypeFor[LiveStats]()
	for i := range stats.NumField() {
		name, _, _ := strings.Cut(stats.Field(i).Tag.Get("json"), ",")
		if name == "" || name[0] < 'a' || name[0] > 'z' {
			t.Errorf("LiveStats.%s has JSON name %q: give it a lower camel case json tag, as its others have", stats.Field(i).Name, name)
			continue
		}
		if _, ok := doc.Live.Stats[name]; !ok {
			t.Errorf("live.stats has no %q (LiveStats.%s): %v", name, stats.Field(i).Name, doc.Live.Stats)
		}
	}
	if len(doc.Live.Stats) != stats.NumField() {
		t.Errorf("live.stats has %d members, LiveStats %d fields", len(doc.Live.Stats), stats.NumField())
	}
	if doc.Live.Stats["subscriptions"] != "3" || doc.Live.Stats["queries"] != "3" {
		t.Errorf("live.stats %v, want 3 subscriptions of 3 queries", doc.Live.Stats)
	}
	if len(doc.Live.Queries) != 3 || doc.Live.More != 0 || time.Since(doc.Live.At) > time.Minute {
		t.Fatalf("live: %d queries, %d more, at %v", len(doc.Live.Queries), doc.Live.More, doc.Live.At)
	}
	q := doc.Live.Queries[0]
	if q.Command != "items_show" || string(q.Arguments) != `{"id":12}` || !slices.Equal(q.Reads, []string{"items/12"}) || q.Subscribers != 1 || q.Scope == "" {
		t.Errorf("first query %+v, want items_show {\"id\":12} reading items/12, one subscriber, a scope tag", q)
	}
	if all := doc.Live.Queries[2]; all.Command != "notes_all" || len(all.Reads) != debugMaxReads || all.MoreReads != n-debugMaxReads {
		t.Errorf("notes_all: %d reads and %d more, want the page's %d and %d", len(all.Reads), all.MoreReads, debugMaxReads, n-debugMaxReads)
	}
	if strings.Contains(body, "tenant-secret") {
		t.Errorf("the JSON shows a scope:\n%s", body)
	}
	if len(doc.Commands) != len(a.Inspect().Commands) {
		t.Errorf("%d commands, Inspect has %d", len(doc.Commands), len(a.Inspect().Commands))
	}
	if !strings.Contains(body, `"description":"Finds notes. \u003cscript\u003e`) {
		t.Errorf("hostile text is not escaped in the JSON:\n%s", body)
	}

	for accept, wantJSON := range map[string]bool{
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": false, // a browser
		"application/json, text/html":                                     true,
		"*/*":                                                             false,
		"":                                                                false,
	} {
		res, body := get(t, hs.URL, accept)
		if got := res.Header.Get("Content-Type") == "application/json"; got != wantJSON || res.StatusCode != 200 {
			t.Errorf("Accept %q: %d %s, want JSON %v:\n%.200s", accept, res.StatusCode, res.Header.Get("Content-Type"), wantJSON, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader("{}"))
	req.Header.Set("Accept", "application/json")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v, %v; want 405", res, err)
	} else {
		res.Body.Close()
	}
}
