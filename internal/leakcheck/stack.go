package leakcheck

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
)

// goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id      uint64
	state   string   // what it is doing: "running", "chan receive", "select", ...
	funcs   []string // the functions on its stack, innermost first
	creator string   // the function after "created by"; "" for the main goroutine
	trace   string   // the whole block, for reports
}

// top is the innermost function shown; the runtime hides its own frames
// (runtime.gopark, runtime.chanrecv) unless GOTRACEBACK=system.
func (g goroutine) top() string {
	if len(g.funcs) == 0 {
		return ""
	}
	return g.funcs[0]
}

// calls reports whether fn is anywhere on g's stack.
func (g goroutine) calls(fn string) bool {
	for _, f := range g.funcs {
		if f == fn {
			return true
		}
	}
	return false
}

// dump returns runtime.Stack of every goroutine, growing the buffer until
// the dump fits.
func dump() []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// currentID is the id of the calling goroutine.
func currentID() uint64 {
	buf := make([]byte, 128) // the header fits; the frames need not
	n := runtime.Stack(buf, false)
	g, _ := parseBlock(string(buf[:n]))
	return g.id
}

// parse splits a dump into goroutines. Blocks are separated by blank
// lines; a block that does not start with a goroutine header is skipped.
func parse(b []byte) []goroutine {
	var out []goroutine
	for block := range bytes.SplitSeq(bytes.TrimSpace(b), []byte("\n\n")) {
		if g, ok := parseBlock(string(block)); ok {
			out = append(out, g)
		}
	}
	return out
}

// parseBlock parses one goroutine: its header, as in
//
//	goroutine 7 [chan receive, 2 minutes]:
//	goroutine 7 gp=0xc000002380 m=nil [select]:   (GOTRACEBACK=system)
//
// then a function line and a file line per frame, and perhaps a
// "created by pkg.fn in goroutine 1" line.
func parseBlock(block string) (goroutine, bool) {
	header, rest, _ := strings.Cut(block, "\n")
	fields, ok := strings.CutPrefix(header, "goroutine ")
	if !ok {
		return goroutine{}, false
	}
	idText, _, _ := strings.Cut(fields, " ")
	id, err := strconv.ParseUint(idText, 10, 64)
	open, end := strings.Index(fields, "["), strings.LastIndex(fields, "]")
	if err != nil || open < 0 || end < open {
		return goroutine{}, false
	}
	g := goroutine{id: id, state: fields[open+1 : end], trace: block}
	for line := range strings.SplitSeq(rest, "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "..."):
			// a file line, or "...additional frames elided..."
		case strings.HasPrefix(line, "created by "):
			fn, _, _ := strings.Cut(strings.TrimPrefix(line, "created by "), " in goroutine ")
			g.creator = fn
		default:
			g.funcs = append(g.funcs, funcName(line))
		}
	}
	return g, true
}

// funcName drops the argument list from a frame's function line:
// "testing.(*T).Run(0xc0000d8008, {0x6467a7, 0x8})" is testing.(*T).Run.
// Arguments never contain "(", names may.
func funcName(line string) string {
	if i := strings.LastIndex(line, "("); i > 0 {
		return line[:i]
	}
	return line
}
