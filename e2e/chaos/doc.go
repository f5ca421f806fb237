// Package chaos holds a bounded end-to-end test of what a client misses
// when its connection drops: the example application (examples/customers)
// behind one TCP proxy per client, in the test process, that cuts every
// client's connections at random (resets, clean closes, silent drops) while
// a writer past the proxies renames the customers the clients watch.
//
// The clients are real: go-sdk (github.com/modelcontextprotocol/go-sdk) on
// both protocol eras, and the official TypeScript clients run by node from
// the packages .ci/real-clients.sh installs into .ci/node. Each is an
// application that re-reads what it is told changed and reconnects as its
// library lets it; after the last write every subscription's last
// notification must be followed by a read that shows the final state.
//
// It is a module of its own so that the library's users never inherit its
// test dependencies; it does not import the adapter. Without node or the
// npm packages it runs the go-sdk clients only, unless
// MCPLIVE_REQUIRE_NODE=1 asks it to fail instead. Run it with
// `go test -v ./...` from this directory; see README.md.
package chaos
