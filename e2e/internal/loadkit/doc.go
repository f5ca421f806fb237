// Package loadkit is what the load tests of the example (e2e/load, and
// e2e/fleet, the same load through a balancer onto three instances) share:
// the plan of their writes, the log of when each write started, the
// problems a run collects, and the percentiles their figures print;
// e2e/chaos, whose clients are go-sdk's and TypeScript's, shares the log
// and the percentiles. Package mcpgoclient reads a URI's one text with an
// mcp-go client.
//
// It is test support, not part of the library: a module of its own under
// internal/, so that only the e2e modules can import it and users of
// github.com/mcplive/adapter never see it.
package loadkit
