// Package fleet holds a bounded end-to-end test of the deployment a user
// runs when one machine is not enough: three instances of the example
// application (examples/customers -postgres) on one PostgreSQL database,
// behind HAProxy configured with the file the example ships
// (examples/customers/haproxy.cfg), and one of the instances killed with
// SIGKILL while hundreds of mark3labs/mcp-go clients watch and writes go
// on.
//
// 2025-11-25 sessions stick to the instance that created them (the
// balancer learns each Mcp-Session-Id from the response that created it);
// 2026-07-28 requests and listen streams go wherever the balance says. The
// clients of the killed instance see their streams end, reconnect through
// the balancer (a new session where theirs died with the instance),
// subscribe again and re-read; after the last write every subscription
// must hold the final state.
//
// It is a module of its own so that the library's users never inherit its
// test dependencies; it does not import the adapter. It needs PostgreSQL
// and HAProxy from Debian (apt-get install postgresql haproxy) and skips
// without them, unless MCPLIVE_REQUIRE_POSTGRES=1 and
// MCPLIVE_REQUIRE_HAPROXY=1 ask it to fail instead. Run it with
// `go test -v ./...` from this directory; see README.md.
package fleet
