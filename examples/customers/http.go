package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// shutdownGrace is how long a stopping server waits for requests in flight.
const shutdownGrace = 5 * time.Second

// What the HTTP server allows its clients; see docs/transports.md, "Serving
// over HTTP in production", for why each is set.
const (
	// sessionIdleTTL ends a legacy session that has sent nothing and had
	// no stream written to for this long, with its subscriptions: a client
	// that vanished without DELETE.
	sessionIdleTTL = 15 * time.Minute
	// heartbeat keeps an open GET stream active (mcp-go pings on it), so
	// that a client that only listens is not taken for a vanished one.
	heartbeat = 30 * time.Second
)

// mcpTransport is the MCP endpoint: mcp-go's Streamable HTTP server, which
// does the work, behind the adapter's HTTPHandler. Everything would work
// with mcp-go alone, but the adapter's edge adds what it lacks: the exact
// errors (-32602 with the field messages in error.data, resource-not-found
// for the client's protocol version), lossless notifications on legacy
// sessions, the Origin check, and a cap on request bodies.
type mcpTransport struct {
	http.Handler
	streamable *server.StreamableHTTPServer
}

// newMCPTransport builds the MCP endpoint: the one place that chooses the
// transport and its settings. reads is how many resources/read it takes
// in at a time (gateReads).
func newMCPTransport(a *adapter.Adapter, logger *slog.Logger, reads int) *mcpTransport {
	ids := newSessionIDs()
	streamable := server.NewStreamableHTTPServer(a.Server(),
		server.WithStreamableHTTPLogger(logger),
		server.WithSessionIdManager(ids), // unknown and ended sessions get 404
		server.WithSessionIdleTTL(sessionIdleTTL),
		server.WithHeartbeatInterval(heartbeat),
		// No server.WithEventStore: HTTPHandler keeps the notifications it
		// writes into GET streams in a bounded store of its own, and a
		// client whose GET stream broke resumes it with Last-Event-ID and
		// hears what it missed. With a store, mcp-go would keep a
		// goroutine and a stream for every session that ever opened a GET
		// stream until the session ends, a vanished client's for the idle
		// TTL (docs/transports.md), to make resumable what the example
		// never sends of its own: sampling, list changes.
	)
	mcp := a.HTTPHandler(ids.guardSessions(streamable))
	return &mcpTransport{
		// Reads wait their turn before the transport takes them in
		// (gate.go).
		Handler:    authenticate(gateReads(reads, mcp)),
		streamable: streamable,
	}
}

// serveHTTP serves MCP at /mcp and a health check at /healthz on ln until ctx
// ends, then shuts down gracefully. On PostgreSQL, /healthz/feed reports the
// change feed.
func serveHTTP(ctx context.Context, ln net.Listener, inst *instance, logger *slog.Logger) error {
	mcpHandler := newMCPTransport(inst.a, logger, 4*gateSize(inst.st.db))
	// Stops the idle-session sweeper and ends the sessions left.
	defer mcpHandler.streamable.Shutdown(context.Background())
	mux := http.NewServeMux()
	// Each request's client address goes into its context, for the
	// adapter's per-client cap (clientaddr.go).
	mux.Handle("/mcp", clientAddress(inst.trusted, mcpHandler))
	mux.Handle("GET /healthz", healthz(inst.st))
	if inst.feed != nil {
		// 200 while the feed listens, 503 while it does not, with its
		// state as JSON. Not listening is not fatal (the subscribers of
		// this instance hear about other instances' writes late, once it
		// reconnects) but it is worth an alert, and a readiness probe
		// can take the instance out of rotation meanwhile.
		mux.Handle("GET /healthz/feed", inst.feed.HealthHandler())
	}
	if inst.tel != nil {
		// For operators (telemetry.go): Prometheus scrapes /metrics, and
		// /debug/live follows the live queries. The page shows their
		// arguments, which may be personal data: it answers loopback only.
		mux.Handle("GET /metrics", inst.tel.metrics)
		mux.Handle("GET /debug/live", loopbackOnly(inst.a.DebugHandler()))
	}

	// Event streams (a subscription, a GET stream) never end by themselves,
	// and Shutdown waits for every handler to return. So every request's
	// context derives from streams, which Shutdown cancels as it begins:
	// streams close at once. A query in flight is cancelled too; its client,
	// which is about to lose the connection anyway, gets an error, and a
	// write's transaction rolls back whole.
	streams, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	hs := &http.Server{
		Handler:     mux,
		BaseContext: func(net.Listener) context.Context { return streams },
		// A client gets this long to send its headers, and its whole
		// request: slow clients cannot hold connections open for free.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// No WriteTimeout: it would cut every event stream after it.
		// Streams end when the client goes, or at shutdown.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(endStreams)

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	logger.Info("serving MCP over Streamable HTTP", "url", url+"/mcp", "health", url+"/healthz")
	if inst.tel != nil {
		logger.Info("serving operators", "metrics", url+"/metrics", "live", url+"/debug/live")
	}
	logger.Info("try it", "inspector", "npx -y @modelcontextprotocol/inspector@2.12.0 --cli "+url+"/mcp --transport http --method resources/templates/list")
	users := demoUsers()
	for _, token := range slices.Sorted(maps.Keys(users)) {
		u := users[token]
		logger.Info("demo user", "user", u.Name, "header", "Authorization: Bearer "+token,
			"inspector", "npx -y @modelcontextprotocol/inspector@2.12.0 --cli "+url+"/mcp --transport http --header 'Authorization: Bearer "+token+"' --method resources/read --uri app://my_orders")
	}

	select {
	case err := <-served:
		return err // Serve failed before anyone asked it to stop
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		hs.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loopbackOnly serves h to clients on the loopback interface only, and 403
// to the others. The request must also name a loopback host: a page on
// another site whose name resolves to 127.0.0.1 (DNS rebinding) reaches the
// server from the operator's own browser, over loopback, but with its own
// name as Host. (mcp-go's localhost protection refuses it on /mcp alike.)
// And it must not carry a proxy's forwarding headers: a proxy on this host
// is loopback too.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			http.Error(w, "forbidden: this page answers loopback only", http.StatusForbidden)
			return
		}
		if !isLoopbackName(r.Host) {
			http.Error(w, fmt.Sprintf("forbidden: this page answers loopback only, not host %q", r.Host), http.StatusForbidden)
			return
		}
		if forwarded(r.Header) {
			// A reverse proxy on this host connects over loopback and, as
			// nginx does by default, may name this server as Host: the
			// page would answer whoever the proxy serves.
			http.Error(w, "forbidden: this page answers loopback only, not requests through a proxy", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// forwarded reports whether a request says it came through a proxy: the
// headers proxies add for the client they serve.
func forwarded(h http.Header) bool {
	for _, name := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if _, ok := h[name]; ok {
			return true
		}
	}
	return false
}

// isLoopbackName reports whether host (a Host header, with or without a
// port) names the loopback interface: localhost, or a loopback address.
func isLoopbackName(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// healthz answers 200 "ok" while the database answers. The store is seeded
// before the server listens, so a reachable server is a ready one.
func healthz(st *store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := st.ping(ctx); err != nil {
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	})
}
