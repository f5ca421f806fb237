// Package exampleproc builds and runs the example application,
// examples/customers, for the end-to-end tests under e2e/ (gosdk, load,
// browser), which drive the real binary rather than a copy of its wiring.
//
// It is test support, not part of the library: a module of its own under
// internal/, so that only the e2e modules can import it and users of
// github.com/mcplive/adapter never see it.
//
// An [Example] builds the binary once per test binary, with `go build`
// from the root of the workspace, so the tests run what users run with
// this checkout's adapter. [Example.StartHTTP] starts it on 127.0.0.1:0,
// takes the port its own listener got from its log, and when the test ends
// stops it with SIGTERM and requires exit status 0, a graceful shutdown.
// A [Log] keeps the last 64 KiB of its stderr for a failing test's report.
// Every wait is bounded: the build, the start and the stop.
//
// A test binary keeps one Example for all its tests:
//
//	var example exampleproc.Example
//
//	func TestMain(m *testing.M) {
//		example.BuildOrExit() // or leave the build to the first StartHTTP
//		goleak.VerifyTestMain(m, goleak.Cleanup(example.RemoveAndExit))
//	}
//
//	func TestSomething(t *testing.T) {
//		endpoint := example.StartHTTP(t) // http://127.0.0.1:PORT/mcp
//		...
//	}
package exampleproc
