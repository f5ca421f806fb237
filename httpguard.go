package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// What HTTPHandler checks before mcp-go sees a request: the transport's
// security rules that mcp-go v1.2.1 leaves out (it checks the Host header
// of loopback connections, not the Origin, and reads any body whole), and
// the shapes of request body that mcp-go would answer badly.

// DefaultMaxBodyBytes is the largest request body HTTPHandler accepts
// unless WithMaxBodyBytes says otherwise.
const DefaultMaxBodyBytes = 4 << 20

// An HTTPOption configures HTTPHandler.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	origins map[string]bool
	// hosts are the allowed Host headers (WithAllowedHosts), lower case;
	// nil for any.
	hosts    map[string]bool
	maxBody  int64
	badInput []string // what the options got wrong, for the panic
}

// WithAllowedOrigins lets browsers on the given origins use the server, in
// addition to those HTTPHandler always accepts: requests without an Origin
// header (clients that are not browsers), origins whose host is the
// request's own Host, and loopback origins (localhost, 127.0.0.0/8, ::1).
// Each origin is matched exactly, as the browser sends it: scheme, host and
// a port other than the scheme's default, without a path or a trailing
// slash ("https://app.example.com", "http://10.0.0.5:3000"). "null", the
// origin of sandboxed frames and local files, is accepted only when listed.
func WithAllowedOrigins(origins ...string) HTTPOption {
	return func(c *httpConfig) {
		for _, o := range origins {
			if o != "null" && !isOrigin(o) {
				c.badInput = append(c.badInput, fmt.Sprintf("allowed origin %q: want scheme://host[:port] and nothing else", o))
				continue
			}
			c.origins[o] = true
		}
	}
}

// WithAllowedHosts makes HTTPHandler answer 403, with a JSON-RPC error
// naming the host, any request whose Host header is not one of hosts: the
// names, and addresses, the server is reached by. A host given without a
// port matches it on any port ("mcp.example.com", "10.0.0.5"); with one,
// on that port only ("mcp.example.com:8443"). Case does not matter.
//
// The Origin check alone does not stop DNS rebinding on a server reachable
// by name from a victim's network, an intranet host: the attacker's page
// sends its own name as both Origin and Host, and an origin whose host is
// the request's own Host passes (so that a page the server serves itself
// can call it). Listing the server's names closes that; mcp-go's localhost
// protection does as much for loopback listeners. Without this option
// every Host passes.
func WithAllowedHosts(hosts ...string) HTTPOption {
	return func(c *httpConfig) {
		if c.hosts == nil {
			c.hosts = map[string]bool{}
		}
		for _, h := range hosts {
			name, _, err := net.SplitHostPort(h)
			if err != nil {
				name = h
			}
			if name == "" || strings.ContainsAny(h, "/?#@ ") {
				c.badInput = append(c.badInput, fmt.Sprintf("allowed host %q: want host or host:port and nothing else", h))
				continue
			}
			c.hosts[strings.ToLower(h)] = true
		}
	}
}

// hostAllowed applies the rule of WithAllowedHosts to r.
func (c *httpConfig) hostAllowed(r *http.Request) bool {
	if c.hosts == nil {
		return true
	}
	host := strings.ToLower(r.Host)
	if c.hosts[host] {
		return true
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		return false // a host:port entry was the only way to match
	}
	return c.hosts[name] || c.hosts["["+name+"]"] // an IPv6 address, given bracketed
}

// WithMaxBodyBytes sets the largest request body HTTPHandler accepts
// (DefaultMaxBodyBytes by default). A longer one is answered 413 Content
// Too Large with a JSON-RPC error, and no more of it is read than the
// limit.
func WithMaxBodyBytes(n int64) HTTPOption {
	return func(c *httpConfig) {
		if n < 1 {
			c.badInput = append(c.badInput, fmt.Sprintf("max body bytes %d: want at least 1", n))
			return
		}
		c.maxBody = n
	}
}

func newHTTPConfig(opts []HTTPOption) httpConfig {
	c := httpConfig{origins: map[string]bool{}, maxBody: DefaultMaxBodyBytes}
	for i, o := range opts {
		if o == nil {
			c.badInput = append(c.badInput, fmt.Sprintf("option %d is nil", i))
			continue
		}
		o(&c)
	}
	if len(c.badInput) > 0 {
		panic("adapter: HTTPHandler: " + strings.Join(c.badInput, "; "))
	}
	return c
}

// isOrigin reports whether s is a serialized origin: scheme://host[:port].
func isOrigin(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != "" && u.Path == "" && u.RawQuery == "" &&
		u.Fragment == "" && u.User == nil && !strings.HasSuffix(s, "/")
}

// originAllowed applies the rules of WithAllowedOrigins to r.
func (c *httpConfig) originAllowed(r *http.Request) (origin string, ok bool) {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return "", true
	}
	origin = origins[0]
	if len(origins) > 1 {
		return strings.Join(origins, ", "), false
	}
	if c.origins[origin] {
		return origin, true
	}
	u, err := url.Parse(origin)
	if err != nil || origin == "null" || !isOrigin(origin) {
		return origin, false
	}
	if strings.EqualFold(hostPort(u.Scheme, u.Host), hostPort(u.Scheme, r.Host)) {
		return origin, true
	}
	return origin, isLoopbackHost(u.Hostname())
}

// hostPort spells host with the default port of scheme removed, so that
// "example.com" and "example.com:443" compare equal for https.
func hostPort(scheme, host string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		return host
	}
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return host
}

// reboundToLoopback reports whether r came over a loopback connection
// yet names a Host that is not loopback: what a page on another site sends
// once the attacker has rebound its name to 127.0.0.1 (DNS rebinding). It
// is the rule of mcp-go's localhost protection; a listener that is not
// loopback passes every Host.
func reboundToLoopback(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if ip, _, err := net.SplitHostPort(local.String()); err != nil || !isLoopbackHost(ip) {
		return false
	}
	name, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		name = strings.TrimSuffix(strings.TrimPrefix(r.Host, "["), "]") // no port
	}
	return !isLoopbackHost(name)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readBody reads a POST body, at most max bytes, and gives r a body that
// replays it. It answers, and reports false, when the body is too large or
// cannot be read.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, bool) {
	if r.ContentLength > max {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, bodyTooLarge(max))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			writeHTTPError(w, http.StatusRequestEntityTooLarge, bodyTooLarge(max))
		} else {
			writeHTTPError(w, http.StatusBadRequest, &rpcError{Code: mcp.PARSE_ERROR, Message: "reading the request body failed"})
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, true
}

func bodyTooLarge(max int64) *rpcError {
	return &rpcError{
		Code:    mcp.INVALID_REQUEST,
		Message: fmt.Sprintf("request body too large: the limit is %d bytes", max),
		Data:    map[string]int64{"limit": max},
	}
}

// errBatch answers a JSON-RPC batch, which MCP's Streamable HTTP transport
// does not carry (and mcp-go would call "not valid json").
var errBatch = &rpcError{
	Code:    mcp.INVALID_REQUEST,
	Message: "JSON-RPC batches are not supported: send one message per request",
}

func isBatch(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n")
	return len(body) > 0 && body[0] == '['
}

// withNotificationMeta returns body with the request _meta that mcp-go
// demands of every 2026-07-28 message added to a client notification that
// lacks it; version is the request's MCP-Protocol-Version header. The
// schema of 2026-07-28 gives notifications an optional meta object without
// the request fields, and clients (go-sdk's notifications/cancelled, for
// one) send them without it: mcp-go answers 400, and a client may drop its
// session for that. Any other body is returned as it is.
func withNotificationMeta(body []byte, version string) []byte {
	if !bytes.Contains(body, []byte(`"notifications/`)) && !bytes.Contains(body, []byte(`\u`)) {
		// Not a notification (every client notification's method starts
		// so, unless JSON escapes spell it): the common request is not
		// decoded here at all.
		return body
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return body
	}
	if hasIDKey(msg) || msg["method"] == nil {
		return body
	}
	params := map[string]json.RawMessage{}
	if raw, ok := msg["params"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if json.Unmarshal(raw, &params) != nil {
			return body
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if json.Unmarshal(raw, &meta) != nil {
			return body
		}
	}
	if _, ok := meta[mcp.MetaKeyProtocolVersion]; ok {
		return body
	}
	meta[mcp.MetaKeyProtocolVersion], _ = json.Marshal(version)
	params["_meta"], _ = json.Marshal(meta)
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	if err != nil {
		return body
	}
	return out
}

// hasIDKey reports whether msg has a key that mcp-go reads as the id: it
// decodes with encoding/json, which matches "ID" and "Id" to it too. Such a
// message is a request, and re-encoding it here would add the _meta a
// request must bring itself, and keep one value of a key given twice where
// the request hook refuses it (requestkeys.go).
func hasIDKey(msg map[string]json.RawMessage) bool {
	for k := range msg {
		if strings.EqualFold(k, "id") {
			return true
		}
	}
	return false
}

// writeHTTPError answers a request that never reaches mcp-go with a
// JSON-RPC error response (id null, as for a request that could not be
// read) and the given status.
func writeHTTPError(w http.ResponseWriter, status int, e *rpcError) {
	b, _ := json.Marshal(wireErrorResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: json.RawMessage("null"), Error: e})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
