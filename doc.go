// Package adapter turns typed, read-only query functions on a
// [github.com/mark3labs/mcp-go/server.MCPServer] into MCP tools, resource
// templates, strictly parsed reads, completions and live subscriptions.
//
// The guide, with a whole program to start from, is in the repository's
// docs folder: https://github.com/mcplive/adapter/tree/main/docs.
//
// # One line, then your queries
//
// A team already on mcp-go wraps its server once, before it serves, and
// declares its queries with [Live] and its writes with [Command]:
//
//	a := adapter.Wrap(srv)
//	adapter.Live(a, "customers_index", "A page of customers, searched and sorted.", listCustomers)
//	adapter.Live(a, "customers_show", "One customer.", showCustomer)
//	adapter.Command(a, "customers_update", "Change a customer.", updateCustomer)
//
// A command is a function func(ctx, A) (R, error) whose argument type A is
// a struct. Its JSON Schema (github.com/invopop/jsonschema) is the tool's
// published input schema, and every call, whichever way it comes, is held
// to all of it: one -32602 names every failing field ([ValidationError]).
// A json.Number field is published as a number and holds it as the request
// wrote it, every digit kept: the type for money and other exact decimals.
//
// # Templates and reads
//
// Each live command whose arguments flatten to scalars is also a resource
// template derived from that exact schema: required arguments are path
// segments, optional ones the query, each group in name order:
//
//	app://customers_show/{id}
//	app://customers_index{?direction,page,per_page,search,sort}
//
// An agent reads an expanded URI (app://customers_show/12) and gets exactly
// what a tools/call with the same values gives. The URI is parsed strictly
// (no unknown, repeated or misplaced parameter; percent-decoding after
// splitting; at most 2 KiB) and converted by the schema's types before the
// command runs. [Adapter.Inspect] tells, per command, its tool, resource
// and template, or the [Reason] it has none.
//
// # Watching
//
// A client subscribes to an expanded URI (subscriptions/listen, or
// resources/subscribe before protocol 2026-07-28). The command runs and
// reports what it read with [Reads]; a write reports what it changed with
// [Adapter.Changed]; the queries that read it re-run, and their subscribers
// hear notifications/resources/updated only when the result differs. A
// [ChangeFeed], given with [WithChangeFeed], carries changes between
// instances (package github.com/mcplive/adapter/pgfeed does it on
// PostgreSQL). [Adapter.Close] ends it all at shutdown.
//
// # Per-user data: scopes
//
// Without more, subscribers of one URI share one query, whose re-runs
// carry no value of any request: its result must depend on its arguments
// and the data only. A command whose answer depends on who asks (my
// orders, my team's tickets) needs a scope: [WithScope] names, per request,
// whose data it sees (a user, a tenant). Subscriptions then share a query,
// and its re-runs, only within one scope; a scoped query re-runs with the
// values of the request that made it, so the command finds its user in ctx
// as in a read, and a write to one user's data notifies that user alone.
// [WithGrant] decides which commands a session may use at all, and is asked
// again before each re-run of a scoped query.
//
// # Transports
//
// Everything works on mcp-go's transports as they are. Serve through the
// adapter's edges, [Adapter.HTTPHandler] and [Adapter.ServeStdio] (or
// [Adapter.HandleMessage] for a transport of your own), for the exact
// JSON-RPC errors mcp-go cannot send, lossless notifications on legacy
// Streamable HTTP, and the HTTP transport's Origin and body checks.
//
// # Middleware and limits
//
// Every invocation passes one chain (package
// github.com/mcplive/adapter/middleware): a tools/call, a read, a
// subscription's runs and a completion, each with its origin. [WithRateLimit]
// limits agents per command, [WithGrant] hides commands per session,
// [WithSubscriptionCap] and [WithClientSubscriptionCap] bound subscriptions.
//
// # Seeing it work
//
// [WithObserver] tells an [Observer] of every read, tools/call, re-run and
// batch of notifications, for metrics and traces (module
// github.com/mcplive/adapter/otel does it on OpenTelemetry);
// [Adapter.LiveStats] and [Adapter.LiveQueries] report the registry's
// state, and [Adapter.DebugHandler] serves a page that follows it live.
//
// How it works inside, file by file, is in docs/architecture.md.
package adapter
