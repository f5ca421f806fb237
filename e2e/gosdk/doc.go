// Package gosdk holds end-to-end tests that drive the example application
// (examples/customers) with the official Go SDK,
// github.com/modelcontextprotocol/go-sdk, as a real MCP client.
//
// It is a module of its own so that users of github.com/mcplive/adapter
// never inherit go-sdk: the tests build the example from the repository
// root with `go build` and talk to the real binary, over Streamable HTTP on
// a loopback port and over stdio, on both protocol eras (2025-11-25 and
// 2026-07-28). Run them with `go test ./...` from this directory; see
// README.md.
package gosdk
