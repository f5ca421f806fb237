// Package bench measures the adapter against mcp-go's own paths and against
// the command's own cost: reads through an in-process mcp-go client, a
// resource template served by plain mcp-go, tools/call, and the live
// registry's fan-out, re-runs and memory. It has benchmarks only:
//
//	go test -run '^$' -bench ParseConvert -benchmem -count 5 . > bench.txt
//	go test -run '^$' -bench . -count 5 -timeout 60m ./bench >> bench.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da bench.txt
//
// docs/performance.md has the figures, the narrower runs that reproduce
// each, what bounds them, and the targets they are held to. CI runs every
// benchmark once (-benchtime 1x) so that they keep compiling and passing.
package bench
