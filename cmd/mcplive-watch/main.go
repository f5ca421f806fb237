// Command mcplive-watch subscribes to resources of an MCP server and prints
// every notifications/resources/updated it hears, with the time it arrived.
// It is the quickest way to see a subscription fire: run it in one terminal,
// write in another.
//
//	mcplive-watch [flags] URL URI...
//	mcplive-watch [flags] -stdio "COMMAND [ARG...]" URI...
//
// URL is a Streamable HTTP endpoint (http://127.0.0.1:8080/mcp); with -stdio
// the tool starts the server itself and speaks to it on its stdin and stdout
// (its stderr is passed through). Each URI is an expanded resource URI, such
// as app://customers_show/1.
//
// Over HTTP, -header 'Name: value' sends a header with every request, such
// as the bearer token a server signs its users in with (repeat it for
// more):
//
//	mcplive-watch -header 'Authorization: Bearer demo-ada' http://127.0.0.1:8080/mcp app://my_orders
//
// It speaks either protocol version. By default (-protocol auto) it takes
// 2026-07-28 when the server speaks it, and subscribes with one
// subscriptions/listen request; with a server that speaks only 2025-11-25 it
// opens the session's GET stream and sends resources/subscribe for each URI.
// -protocol 2026-07-28 or -protocol 2025-11-25 insists on one.
//
// Notifications go to stdout, one line each:
//
//	2026-12-05T17:57:09.456+01:00 updated app://customers_show/1
//
// With -read it then reads the URI again and prints the result; with -diff
// it prints what changed since the last read, line by line (JSON results are
// indented first, so a changed field is a changed line). What the tool is
// doing, and why it stopped, goes to stderr.
//
// Ctrl-C ends it (exit status 0), as does the -count'th notification. It
// exits with status 1 when it cannot connect, the server does not offer
// subscriptions, a URI is not acknowledged, or the server ends the
// subscription; and 2 on a bad command line. Every wait for the server is
// bounded by -timeout.
//
// In a clone of the repository, run it with `go run ./cmd/mcplive-watch`; in
// a module that requires github.com/mcplive/adapter, with
// `go run github.com/mcplive/adapter/cmd/mcplive-watch`. Once the module is
// published, `go install github.com/mcplive/adapter/cmd/mcplive-watch@latest`
// installs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The protocol versions the tool speaks, and the value of -protocol that
// lets the server choose.
const (
	protocolAuto   = "auto"
	protocolListen = mcp.ProtocolVersion20260728 // subscriptions/listen
	protocolLegacy = mcp.ProtocolVersion20251125 // resources/subscribe on a GET stream
)

// defaultTimeout bounds each wait for the server: a connection, a request,
// an acknowledgement.
const defaultTimeout = 30 * time.Second

// Exit statuses.
const (
	exitOK    = 0 // interrupted, or -count notifications heard
	exitFail  = 1 // the watch could not start or did not last
	exitUsage = 2 // a bad command line
)

// config is what the command line says.
type config struct {
	endpoint string      // the Streamable HTTP URL; "" with -stdio
	headers  http.Header // sent with every HTTP request (-header)
	command  []string    // the stdio server's command and arguments
	uris     []string
	protocol string // protocolAuto, protocolListen or protocolLegacy
	read     bool
	diff     bool
	count    int
	timeout  time.Duration
	verbose  bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command: it parses args, watches until ctx ends, the
// count is reached or the watch fails, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage // parseArgs said what is wrong
	}
	if err := watch(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "mcplive-watch: %v\n", err)
		return exitFail
	}
	return exitOK
}

const usage = `usage: mcplive-watch [flags] URL URI...
       mcplive-watch [flags] -stdio "COMMAND [ARG...]" URI...

Subscribes to each URI on the MCP server and prints every
notifications/resources/updated it hears, with the time it arrived.
URL is a Streamable HTTP endpoint, such as http://127.0.0.1:8080/mcp;
each URI an expanded resource URI, such as app://customers_show/1.
Ctrl-C stops it.

Flags (before or after the arguments):
`

// parseArgs reads the command line. Flags may come before, between or after
// the arguments. A mistake is reported on errOut, with the usage.
func parseArgs(args []string, errOut io.Writer) (config, error) {
	cfg := config{protocol: protocolAuto, timeout: defaultTimeout}
	var stdio string
	fs := flag.NewFlagSet("mcplive-watch", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprint(errOut, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&stdio, "stdio", "", "start this MCP server `command` and speak to it on its stdin and stdout, instead of a URL;\n"+
		"it is split at spaces, without quoting (its stderr is passed through)")
	fs.StringVar(&cfg.protocol, "protocol", protocolAuto, "protocol `version`: "+protocolListen+" (subscriptions/listen), "+
		protocolLegacy+" (resources/subscribe on the GET stream),\nor auto: "+protocolListen+" if the server speaks it")
	fs.BoolVar(&cfg.read, "read", false, "after each notification, read the URI again and print the result")
	fs.BoolVar(&cfg.diff, "diff", false, "after each notification, read the URI again and print the lines that changed since the last read\n"+
		"(a JSON result is indented first, so that each field is a line)")
	fs.IntVar(&cfg.count, "count", 0, "exit after `n` notifications (0: run until Ctrl-C)")
	fs.DurationVar(&cfg.timeout, "timeout", defaultTimeout, "how long to wait for the server to connect, answer a request or acknowledge a subscription")
	fs.BoolVar(&cfg.verbose, "v", false, "also print the MCP client's own log")
	fs.Func("header", "send this HTTP `header`, written 'Name: value', with every request (repeatable),\n"+
		"such as 'Authorization: Bearer TOKEN'", func(s string) error {
		name, value, err := parseHeader(s)
		if err != nil {
			return err
		}
		if cfg.headers == nil {
			cfg.headers = http.Header{}
		}
		cfg.headers.Add(name, value)
		return nil
	})

	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return cfg, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" { // everything after is an argument
			positional = append(positional, args[1:]...)
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}

	if err := cfg.complete(stdio, positional); err != nil {
		fmt.Fprintf(errOut, "mcplive-watch: %v\n", err)
		fmt.Fprintf(errOut, "Run mcplive-watch -h for the usage.\n")
		return cfg, err
	}
	return cfg, nil
}

// complete checks the flags and fills in the endpoint or the command, and
// the URIs, from stdio and the positional arguments.
func (cfg *config) complete(stdio string, positional []string) error {
	if stdio != "" {
		cfg.command = strings.Fields(stdio)
		if len(cfg.command) == 0 {
			return fmt.Errorf("-stdio: no command in %q", stdio)
		}
		if len(cfg.headers) > 0 {
			return errors.New("-header with -stdio: headers go with HTTP requests; a stdio server takes what it needs from its command line or environment")
		}
	} else {
		if len(positional) == 0 {
			return errors.New("no URL: give the server's Streamable HTTP endpoint (or -stdio and a command), then the URIs to watch")
		}
		endpoint, err := checkEndpoint(positional[0])
		if err != nil {
			return err
		}
		cfg.endpoint, positional = endpoint, positional[1:]
	}
	if len(positional) == 0 {
		return errors.New("no URI to watch: give at least one, such as app://customers_show/1")
	}
	seen := make(map[string]bool, len(positional))
	for _, uri := range positional {
		if err := checkURI(uri); err != nil {
			return err
		}
		if seen[uri] {
			return fmt.Errorf("the URI %s is given twice", uri)
		}
		seen[uri] = true
	}
	cfg.uris = positional
	switch {
	case cfg.protocol != protocolAuto && cfg.protocol != protocolListen && cfg.protocol != protocolLegacy:
		return fmt.Errorf("-protocol %q: want %s, %s or %s", cfg.protocol, protocolAuto, protocolListen, protocolLegacy)
	case cfg.read && cfg.diff:
		return errors.New("-read and -diff: choose one")
	case cfg.count < 0:
		return fmt.Errorf("-count %d: want 0 (no limit) or more", cfg.count)
	case cfg.timeout <= 0:
		return fmt.Errorf("-timeout %v: want a positive duration, such as 30s", cfg.timeout)
	}
	return nil
}

// headersTheClientSets are the headers mcp-go's client sets itself, per
// request: one given with -header as well would contradict them.
var headersTheClientSets = []string{"Accept", "Content-Type", "Content-Length", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Last-Event-Id", "Host"}

// parseHeader reads a -header value, "Name: value", and returns the name
// in its canonical form and the value without the spaces around it.
func parseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return "", "", fmt.Errorf("%q: want Name: value, such as 'Authorization: Bearer TOKEN'", s)
	case name == "" || strings.IndexFunc(name, notTokenChar) >= 0:
		return "", "", fmt.Errorf("%q: the name %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~, no space)", s, name)
	case strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
		return "", "", fmt.Errorf("%q: the value holds a control character (a line break, say)", s)
	}
	name = http.CanonicalHeaderKey(name)
	for _, own := range headersTheClientSets {
		if name == own {
			return "", "", fmt.Errorf("%q: the MCP client sets %s itself", s, name)
		}
	}
	return name, strings.Trim(value, " \t"), nil
}

// notTokenChar reports a rune that may not be in a header name (RFC 9110's
// token).
func notTokenChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		return false
	}
	return true
}

// checkEndpoint returns s if it is an http or https URL with a host.
func checkEndpoint(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("bad URL %q: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("bad URL %q: want an http:// or https:// URL of a Streamable HTTP endpoint, such as http://127.0.0.1:8080/mcp (or -stdio to start a server)", s)
	case u.Host == "":
		return "", fmt.Errorf("bad URL %q: it names no host", s)
	}
	return s, nil
}

// checkURI accepts a URI that starts with a scheme (RFC 3986: a letter,
// then letters, digits, "+", "-" or ".", then ":"). The server decides what
// else is wrong with it, and the tool reports what it says.
func checkURI(s string) error {
	scheme, _, ok := strings.Cut(s, ":")
	valid := ok && scheme != "" && isLetter(scheme[0])
	for i := 1; valid && i < len(scheme); i++ {
		c := scheme[i]
		valid = isLetter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
	}
	if !valid {
		return fmt.Errorf("bad URI %q: want an absolute resource URI, such as app://customers_show/1", s)
	}
	return nil
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
