package middleware

import (
	"context"
	"net"
	"net/http"
)

// Why this file exists: RateLimit keys an agent by its session ID, but on
// stateless Streamable HTTP (protocol 2026-07-28) every request gets a fresh
// session whose ID is "". The next best key is the client's network address,
// and mcp-go does not hand that to handlers: the handler's context derives
// from the *http.Request's context, which net/http fills with the server and
// the local address but not the remote one, and the session types carry no
// address either. So the address has to be put into the context on the way
// in, by one of the two helpers below.

type remoteAddrKey struct{}

// ContextWithRemoteAddr returns a copy of ctx that carries addr, the
// network address of the client, in the form of http.Request.RemoteAddr
// ("host:port", or just a host).
func ContextWithRemoteAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, remoteAddrKey{}, addr)
}

// RemoteAddrFrom reports the client address ctx carries, exactly as it was
// stored, and whether there was a non-empty one.
func RemoteAddrFrom(ctx context.Context) (string, bool) {
	addr, _ := ctx.Value(remoteAddrKey{}).(string)
	return addr, addr != ""
}

// RemoteAddrContext copies r.RemoteAddr into ctx. Its signature is that of
// mcp-go's server.HTTPContextFunc and server.SSEContextFunc, so it can be
// installed as is:
//
//	httpSrv := server.NewStreamableHTTPServer(srv,
//		server.WithHTTPContextFunc(middleware.RemoteAddrContext))
//
// mcp-go holds one context function per transport; if you already have one,
// call RemoteAddrContext from it. Alternatively wrap the transport's handler
// with RemoteAddrHandler, which needs no transport option at all.
//
// Without one of the two, RateLimit cannot tell the clients of stateless
// Streamable HTTP apart and they share one bucket per command.
func RemoteAddrContext(ctx context.Context, r *http.Request) context.Context {
	if r == nil || r.RemoteAddr == "" {
		return ctx
	}
	return ContextWithRemoteAddr(ctx, r.RemoteAddr)
}

// RemoteAddrHandler returns an http.Handler that stores r.RemoteAddr in the
// request's context and calls next. mcp-go's Streamable HTTP and SSE servers
// derive every handler's context from the request's context, so wrapping
// them this way has the same effect as RemoteAddrContext:
//
//	mux.Handle("/mcp", middleware.RemoteAddrHandler(server.NewStreamableHTTPServer(srv)))
//
// Behind a reverse proxy r.RemoteAddr is the proxy's address; put a handler
// that rewrites it from a header you trust (and only then) in front of this
// one, or key RateLimit on something else with KeyFunc.
func RemoteAddrHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(RemoteAddrContext(r.Context(), r)))
	})
}

// remoteHost is addr without its port. A client opens a new connection, and
// so gets a new port, whenever it likes; keying on the port would let it
// shed its limit by reconnecting.
func remoteHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
