// Package load holds a bounded load test that drives the example
// application (examples/customers) over real Streamable HTTP with many
// mark3labs/mcp-go clients at once, and checks that no subscriber misses
// a change.
//
// Each session subscribes to 20 URIs and, whenever it is told one changed,
// re-reads it on its own session: on the 2025-11-25 era that is a POST
// while the session's GET stream is being written, the pattern in which
// mcp-go v1.2.1's transport alone loses notifications. A separate session
// writes at a steady rate; three seconds after the last write every
// session's last read of every URI must equal what a fresh session reads,
// and every change must have been read by every session watching it.
//
// It is a module of its own so that the library's users never inherit its
// test dependencies; it does not import the adapter. Run it with
// `go test -v ./...` from this directory; see README.md.
package load
