package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"
)

// The profiler: with -pprof 127.0.0.1:PORT the example serves Go's
// net/http/pprof on a listener of its own, so that an operator or a load
// test can take a CPU or heap profile of the server at work:
//
//	go tool pprof 'http://127.0.0.1:6060/debug/pprof/profile?seconds=30'
//	go tool pprof http://127.0.0.1:6060/debug/pprof/heap
//
// It answers loopback only (the address must be a loopback one, and
// loopbackOnly refuses other Host names and proxied requests): a profile
// shows the program's internals, and a long CPU profile costs the server
// while it runs. A CPU profile or a trace lasts at most pprofMaxSeconds.

// pprofMaxSeconds bounds the seconds a CPU profile or an execution trace
// may ask for.
const pprofMaxSeconds = 120

// pprofWriteTimeout bounds every other response of the profiler;
// net/http/pprof extends it by the seconds a profile asks for.
const pprofWriteTimeout = 30 * time.Second

// checkPprofAddr refuses a -pprof address that is not on loopback.
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-pprof %q: %v; give a loopback address such as 127.0.0.1:6060", addr, err)
	}
	if !isLoopbackName(host) {
		return fmt.Errorf("-pprof %q: the profiler answers loopback only; give a loopback address such as 127.0.0.1:6060", addr)
	}
	return nil
}

// servePprof serves the profiler on addr until ctx ends; stop shuts it
// down and waits for it. It logs where it serves.
func servePprof(ctx context.Context, addr string, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.Handle("GET /debug/pprof/profile", boundedSeconds(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.Handle("GET /debug/pprof/trace", boundedSeconds(pprof.Trace))
	hs := &http.Server{
		Handler:           loopbackOnly(mux),
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      pprofWriteTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("serving the profiler", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() {
		// A profile under way ends with the context; nothing else is long.
		shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := hs.Shutdown(shutdownCtx); err != nil {
			hs.Close()
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("the profiler stopped", "err", err)
		}
	}, nil
}

// boundedSeconds answers 400 to a request for a profile of more than
// pprofMaxSeconds, and passes the others to h.
func boundedSeconds(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get("seconds"); v != "" {
			if sec, err := strconv.ParseFloat(v, 64); err == nil && sec > pprofMaxSeconds {
				http.Error(w, fmt.Sprintf("a profile of %s s is longer than the profiler allows, %d s", v, pprofMaxSeconds), http.StatusBadRequest)
				return
			}
		}
		h(w, r)
	})
}
