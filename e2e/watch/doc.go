// Package watch holds the end-to-end test of the watch tool,
// cmd/mcplive-watch: it builds the tool and the example application
// (examples/customers) from this checkout, serves the example on a loopback
// port, runs the tool against it as a user would, writes with a tools/call,
// and checks that the tool printed the notification, on both protocol
// versions (2026-07-28 and 2025-11-25), and as each of the example's demo
// users (-header with a bearer token): a user's new order prints in that
// user's watch only.
//
// It is a module of its own, like the other end-to-end tests, so that users
// of github.com/mcplive/adapter never inherit its test dependencies. Run it
// with `go test ./...` from this directory.
package watch
