package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
)

// shutdownGrace is how long a stopping server waits for requests in flight.
const shutdownGrace = 5 * time.Second

// newMCPHandler builds the http.Handler that speaks MCP at /mcp: the one place
// that chooses the transport.
//
// mcp-go's Streamable HTTP server does the work. Everything would work with it
// alone, but mcp-go can only answer a failed read with -32603 and no data;
// the adapter's wrapper rewrites those answers into the exact errors
// (-32602 with the field messages in error.data, resource-not-found for the
// client's protocol version).
func newMCPHandler(a *adapter.Adapter, logger *slog.Logger) http.Handler {
	return a.HTTPHandler(server.NewStreamableHTTPServer(a.Server(), server.WithStreamableHTTPLogger(logger)))
}

// serveHTTP serves MCP at /mcp and a health check at /healthz on ln until ctx
// ends, then shuts down gracefully. On PostgreSQL, /healthz/feed reports the
// change feed.
func serveHTTP(ctx context.Context, ln net.Listener, inst *instance, logger *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", newMCPHandler(inst.a, logger))
	mux.Handle("GET /healthz", healthz(inst.st))
	if inst.feed != nil {
		// 200 while the feed listens, 503 while it does not, with its
		// state as JSON. Not listening is not fatal (the subscribers of
		// this instance hear about other instances' writes late, once it
		// reconnects) but it is worth an alert, and a readiness probe
		// can take the instance out of rotation meanwhile.
		mux.Handle("GET /healthz/feed", inst.feed.HealthHandler())
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
		Handler:           mux,
		BaseContext:       func(net.Listener) context.Context { return streams },
		ReadHeaderTimeout: 10 * time.Second,
	}
	hs.RegisterOnShutdown(endStreams)

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	logger.Info("serving MCP over Streamable HTTP", "url", url+"/mcp", "health", url+"/healthz")
	logger.Info("try it", "inspector", "npx -y @modelcontextprotocol/inspector@2.12.0 --cli "+url+"/mcp --transport http --method resources/templates/list")

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
