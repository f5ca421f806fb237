// Command customers is the example application of github.com/mcplive/adapter:
// a small shop's customers and orders in an embedded SQLite database, served
// to MCP clients as tools, resource templates and live subscriptions.
//
//	go run ./examples/customers                # Streamable HTTP on 127.0.0.1:8080/mcp
//	go run ./examples/customers -stdio         # stdio, for clients that start servers
//	go run ./examples/customers -inspect       # what each command became, then exit
//	go run ./examples/customers -db shop.db    # keep the data in a file
//	go run ./examples/customers -postgres postgres://localhost/shop -addr :8081
//	                                           # PostgreSQL, shared by many instances
//	go run ./examples/customers -postgres postgres://localhost/shop -feed wal
//	                                           # ... who hear each other through the WAL
//	go run ./examples/customers -pprof 127.0.0.1:6060
//	                                           # and Go's profiler, on loopback (pprof.go)
//
// Start reading at commands.go, and args.go for what each command takes;
// store.go, seed.go and queries.go are ordinary database/sql code that knows
// nothing about MCP, fold.go how search ignores case over all of Unicode, and
// dialect.go what differs on PostgreSQL. postgres.go connects the instances
// that share a PostgreSQL database (docs/many-instances.md). http.go and
// sessions.go are how it serves over HTTP, as an operator should.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/middleware"
	"github.com/mcplive/adapter/pgfeed"
)

// config is what the flags say.
type config struct {
	addr     string // where HTTP listens
	dbPath   string // "" for a fresh in-memory database
	postgres string // a PostgreSQL connection URL, to use instead of SQLite
	// feed is what the instances on PostgreSQL hear each other's writes
	// through (postgres.go): "notify" or "wal".
	feed string
	// trustedProxies are the load balancers whose X-Forwarded-For names
	// the client (clientaddr.go), as the flag spells them.
	trustedProxies string
	// pprof is where the profiler listens (pprof.go); "" for nowhere.
	pprof   string
	stdio   bool
	inspect bool
	// keptMiB is the budget of the results live queries keep to answer
	// re-reads with (adapter.WithKeptResults), in MiB, 0 for none; nil
	// for the adapter's default, when -kept-mib is not given.
	keptMiB *int
}

func main() {
	// Logs go to stderr: with -stdio, stdout carries the protocol.
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // the flag package already said what is wrong
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdin, os.Stdout, logger); err != nil {
		logger.Error("customers stopped", "err", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string, errOut io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("customers", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "`address` to serve Streamable HTTP on (path /mcp)")
	fs.StringVar(&cfg.dbPath, "db", "", "SQLite database `file` (default: in memory, fresh on every start)")
	fs.StringVar(&cfg.postgres, "postgres", "", "PostgreSQL connection `URL` (postgres://user@host/db): keep the data there instead of SQLite,\n"+
		"shared by every instance started with it (see docs/many-instances.md)")
	fs.StringVar(&cfg.feed, "feed", string(pgfeed.Notify), "with -postgres, what instances hear each other's writes through: `notify` (LISTEN/NOTIFY and\n"+
		"triggers, on any PostgreSQL) or wal (the write-ahead log: needs wal_level=logical and a role with REPLICATION)")
	fs.StringVar(&cfg.trustedProxies, "trusted-proxy", "", "`addresses` or CIDR networks of the load balancers in front (comma-separated): their\n"+
		"X-Forwarded-For names the client, whose address keys the per-client subscription cap")
	fs.StringVar(&cfg.pprof, "pprof", "", "loopback `address` to serve Go's profiler on (net/http/pprof, at /debug/pprof/); off by default")
	keptMiB := fs.Int("kept-mib", adapter.DefaultKeptResultsBudget>>20, "`MiB` of results the live queries keep, so that re-reads do not run their command again;\n"+
		"0 keeps none, and every read runs its command (docs/watching.md)")
	fs.BoolVar(&cfg.stdio, "stdio", false, "serve MCP on stdin/stdout instead of HTTP")
	fs.BoolVar(&cfg.inspect, "inspect", false, "print what each command became (tool, resource, template) and exit")
	if err := fs.Parse(args); err != nil {
		return cfg, err // the flag package has said what is wrong
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "kept-mib" {
			cfg.keptMiB = keptMiB
		}
	})
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case cfg.dbPath != "" && cfg.postgres != "":
		err = errors.New("-db and -postgres name two databases: choose one")
	case *keptMiB < 0 || *keptMiB > 1<<20:
		err = fmt.Errorf("-kept-mib %d: want 0 (keep none) to %d", *keptMiB, 1<<20)
	case cfg.feed != string(pgfeed.Notify) && cfg.feed != string(pgfeed.WAL):
		err = fmt.Errorf("-feed %q: want notify or wal", cfg.feed)
	case flagSet(fs, "feed") && cfg.postgres == "":
		err = errors.New("-feed connects instances on PostgreSQL: it needs -postgres")
	default:
		_, err = parseTrustedProxies(cfg.trustedProxies)
	}
	if err == nil && cfg.pprof != "" {
		err = checkPprofAddr(cfg.pprof)
	}
	if err != nil {
		fmt.Fprintln(errOut, err)
	}
	return cfg, err
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// run serves until ctx ends (on SIGINT or SIGTERM) or serving fails.
func run(ctx context.Context, cfg config, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	if cfg.inspect {
		// The report depends only on the declarations, not on the data:
		// never create or touch a database for it.
		cfg.dbPath, cfg.postgres = "", ""
	}
	inst, err := openInstance(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer func() {
		if err := inst.Close(); err != nil {
			logger.Warn("closing", "err", err)
		}
	}()

	if cfg.pprof != "" && !cfg.inspect {
		stopPprof, err := servePprof(ctx, cfg.pprof, logger)
		if err != nil {
			return err
		}
		defer stopPprof()
	}

	switch {
	case cfg.inspect:
		_, err := fmt.Fprint(stdout, inst.a.Inspect().String())
		return err
	case cfg.stdio:
		return serveStdio(ctx, inst.a, stdin, stdout, logger)
	default:
		ln, err := net.Listen("tcp", cfg.addr)
		if err != nil {
			return err
		}
		inst.trusted, _ = parseTrustedProxies(cfg.trustedProxies) // parseFlags checked it
		return serveHTTP(ctx, ln, inst, logger)
	}
}

// instance is what run serves: the store, the MCP server over it and, on
// PostgreSQL, the change feed that connects it to the other instances.
type instance struct {
	st   *store
	a    *adapter.Adapter
	feed *pgfeed.Feed // nil on SQLite
	stop func()       // stops the feed; nil on SQLite
	tel  *telemetry   // metrics and traces of a (telemetry.go)
	// trusted are the proxies whose X-Forwarded-For serveHTTP believes
	// (clientaddr.go); none by default.
	trusted trustedProxies
}

// openInstance opens the database the flags name and builds the MCP server
// on it, reporting to its telemetry.
func openInstance(ctx context.Context, cfg config, logger *slog.Logger) (*instance, error) {
	tel, err := newTelemetry()
	if err != nil {
		return nil, err
	}
	var inst *instance
	opts := []adapter.Option{tel.option()}
	if cfg.keptMiB != nil {
		opts = append(opts, adapter.WithKeptResults(*cfg.keptMiB<<20, adapter.DefaultKeptResultMax))
	}
	if cfg.postgres != "" {
		source := pgfeed.Source(cmp.Or(cfg.feed, string(pgfeed.Notify)))
		inst, err = openPostgresInstance(ctx, cfg.postgres, source, logger, opts...) // postgres.go
	} else {
		var st *store
		if st, err = openStore(ctx, cfg.dbPath); err == nil {
			inst = &instance{st: st, a: newAdapter(st, logger, opts...)}
		}
	}
	if err != nil {
		return nil, errors.Join(err, tel.close())
	}
	if err := tel.register(inst.a); err != nil {
		return nil, errors.Join(err, inst.Close(), tel.close())
	}
	if inst.feed != nil {
		if err := tel.registerFeed(inst.feed); err != nil { // feedmetrics.go
			return nil, errors.Join(err, inst.Close(), tel.close())
		}
	}
	inst.tel = tel
	return inst, nil
}

// Close ends the adapter's live work (re-runs finish, listen streams end,
// no goroutine is left), then stops the change feed, if any, and closes
// the store. run calls it once serving has stopped.
func (inst *instance) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := inst.a.Close(ctx)
	if inst.stop != nil {
		inst.stop()
	}
	if inst.tel != nil {
		err = errors.Join(err, inst.tel.close())
	}
	return errors.Join(err, inst.st.Close())
}

// newAdapter builds the MCP server: a plain mcp-go server, wrapped by the
// adapter before it serves, with the example's commands declared on it.
// a.Server() is the mcp-go server, for anything else you would do with one.
// opts are more adapter options, such as the change feed of postgres.go.
//
// Every invocation of a command is logged at info (a failed one at warn):
// tool calls, reads, subscriptions' first runs, and re-runs (origin "live")
// after a write. Arguments are not logged; they may be personal data.
func newAdapter(st *store, logger *slog.Logger, opts ...adapter.Option) *adapter.Adapter {
	srv := server.NewMCPServer("customers", "0.1.0",
		server.WithInstructions("A demo shop's customers and orders. Read app://customers_index?search=ada "+
			"or app://customers_show/1, and subscribe to them to hear about changes."),
	)
	logCalls := middleware.Log(logger, middleware.LogLevels(slog.LevelInfo, slog.LevelWarn))
	gate := readGate(gateSize(st.db), writeCommands...) // gate.go
	base := append([]adapter.Option{adapter.WithLogger(logger), adapter.WithMiddleware(logCalls, gate)}, userOptions()...)
	a := adapter.Wrap(srv, append(base, opts...)...)
	register(a, st)
	return a
}

// serveStdio serves one client on stdin/stdout until ctx ends or the client
// closes stdin. a.ServeStdio is mcp-go's stdio server, with the adapter's
// exact errors on the wire (see newMCPTransport).
func serveStdio(ctx context.Context, a *adapter.Adapter, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	logger.Info("serving MCP on stdio; logs go to stderr")
	err := a.ServeStdio(ctx, stdin, stdout,
		server.WithErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError)))
	if errors.Is(err, context.Canceled) {
		return nil // asked to stop
	}
	return err
}
