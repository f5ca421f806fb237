package adapter

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzWithNotificationMeta: whatever the body, withNotificationMeta does
// not panic; it changes only a notification without the protocol version,
// into one that carries it and keeps everything else.
func FuzzWithNotificationMeta(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"x","params":null}`,
		`{"jsonrpc":"2.0","method":"x","params":{"_meta":null}}`,
		`{"jsonrpc":"2.0","method":"x","params":{"_meta":{"a":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","method":"x","params":[1]}`,
		`[1,2]`, `nul`, `{"method":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out := withNotificationMeta(body, mcp.ProtocolVersion20260728)
		if string(out) == string(body) {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(body, &before) != nil {
			t.Fatalf("changed a body that is not a JSON object: %q", body)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("wrote invalid JSON %q: %v", out, err)
		}
		if _, ok := before["id"]; ok {
			t.Fatalf("changed a request: %q", body)
		}
		var m struct {
			Params struct {
				Meta *mcp.Meta `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(out, &m) != nil || m.Params.Meta.ProtocolVersion() != mcp.ProtocolVersion20260728 {
			t.Fatalf("no protocol version in %q", out)
		}
		for k, v := range before {
			if k != "params" && string(after[k]) != string(v) {
				// Re-encoding may respell a value; it must mean the same.
				var x, y any
				_ = json.Unmarshal(v, &x)
				_ = json.Unmarshal(after[k], &y)
				bx, _ := json.Marshal(x)
				by, _ := json.Marshal(y)
				if string(bx) != string(by) {
					t.Fatalf("key %q changed from %s to %s", k, v, after[k])
				}
			}
		}
	})
}

// FuzzOriginAllowed: no Origin header makes originAllowed panic, and only
// the kinds of origin it documents pass.
func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"http://evil.example", "null", "http://localhost:1", "http://[::1]:80", "https://h", "http://%zz", "http://127.0.0.1.evil", "http://[fe80::1%25eth0]:80", ""} {
		f.Add(s, "h:443")
	}
	cfg := newHTTPConfig([]HTTPOption{WithAllowedOrigins("https://app.example.com")})
	f.Fuzz(func(t *testing.T, origin, host string) {
		r := &http.Request{Header: http.Header{}, Host: host}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if _, ok := cfg.originAllowed(r); ok && origin != "" && origin != "https://app.example.com" && !isOrigin(origin) {
			t.Fatalf("origin %q allowed for host %q, though it is not an origin", origin, host)
		}
	})
}
