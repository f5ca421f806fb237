package adapter

import (
	"net/http"
	"strings"
	"testing"
)

// TestHTTPHandlerRefusesRepeatedKeysWhateverTheIDIsSpelled: encoding/json,
// and with it mcp-go, matches the key "ID" (or "Id") to the id of a
// request. The edge took such a 2026-07-28 request for a notification and
// re-encoded it: it added the protocol _meta that a request must bring
// itself, and kept one value of a key given twice, so that mcp-go ran the
// call with the second "arguments" where the request hook would refuse it.
func TestHTTPHandlerRefusesRepeatedKeysWhateverTheIDIsSpelled(t *testing.T) {
	for _, idKey := range []string{`"id"`, `"ID"`, `"Id"`} {
		g := newGuardServer(t)
		r := modernCall("")
		r.body = strings.Replace(r.body, `"id":7`, idKey+`:7`, 1)
		// The same key twice in params; an escape anywhere in the body.
		r.body = strings.Replace(r.body, `"arguments":{"id":1}`, `"arguments":{"id":1},"arguments":{"id":2}`, 1)
		r.body = strings.Replace(r.body, `clientInfo":{"name":"t"`, `clientInfo":{"name":"\u0074"`, 1)
		// Without the protocol version in _meta, which the edge adds to
		// notifications only.
		r.body = strings.Replace(r.body, `"io.modelcontextprotocol/protocolVersion":"2026-07-28",`, "", 1)
		status, body := g.do(t, r)
		if g.writes.Load() != 0 {
			t.Errorf("%s: the call ran (status %d, %s)", idKey, status, body)
			continue
		}
		if status != http.StatusBadRequest {
			t.Errorf("%s: status %d, body %s; want 400", idKey, status, body)
		}
	}
}

// TestHTTPHandlerRefusesKeysThatDifferInCaseOnly: mcp-go decodes a
// request and its params into structs, and encoding/json matches a
// struct's field by its key whatever the case, keeping the last: a
// tools/call with "name":"nope","Name":"items_touch" runs items_touch,
// where a proxy, reading keys by case as JSON parsers elsewhere do, saw
// "nope". Inside the objects mcp-go decodes as maps (_meta, a call's
// arguments), keys that differ in case are different keys.
func TestHTTPHandlerRefusesKeysThatDifferInCaseOnly(t *testing.T) {
	for _, c := range []struct{ from, to string }{
		{`"name":"items_touch"`, `"name":"nope","Name":"items_touch"`},
		{`"arguments":{"id":1}`, `"arguments":{"id":1},"ARGUMENTS":{"id":2}`},
		{`"jsonrpc":"2.0"`, `"jsonrpc":"2.0","Method":"tools/list"`},
	} {
		g := newGuardServer(t)
		r := modernCall("")
		r.body = strings.Replace(r.body, c.from, c.to, 1)
		status, body := g.do(t, r)
		if g.writes.Load() != 0 || status != http.StatusBadRequest || !strings.Contains(string(body), `"code":-32602`) {
			t.Errorf("%s: status %d, %d runs, %s; want 400 with -32602 and no run", c.to, status, g.writes.Load(), body)
		}
	}
	g := newGuardServer(t)
	r := modernCall("")
	r.body = strings.Replace(r.body, `"_meta":{`, `"_meta":{"x.example/k":1,"x.example/K":2,`, 1)
	if status, body := g.do(t, r); status != http.StatusOK || g.writes.Load() != 1 {
		t.Fatalf("keys of _meta that differ in case: status %d, %s; want the call run", status, body)
	}
}
