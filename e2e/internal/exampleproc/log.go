package exampleproc

import (
	"bytes"
	"strings"
	"sync"
)

// logCap bounds how much of the example's log a Log keeps.
const logCap = 64 << 10

// Log is an io.Writer for the example's stderr. It keeps the last 64 KiB,
// for a failing test's report, and notes the MCP endpoint from the line in
// which the example says where it serves. The zero Log is ready to use.
type Log struct {
	mu       sync.Mutex
	buf      []byte
	partial  []byte // the unfinished last line, until the endpoint is found
	found    bool
	endpoint chan string // receives the endpoint once; made on first use
}

// Write keeps p, dropping what falls beyond the last 64 KiB. It never
// fails.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - logCap; over > 0 {
		l.buf = l.buf[over:]
	}
	if !l.found {
		l.scan(p)
	}
	return len(p), nil
}

// scan looks for the endpoint in the complete lines that p ends.
func (l *Log) scan(p []byte) {
	l.partial = append(l.partial, p...)
	for {
		line, rest, ok := bytes.Cut(l.partial, []byte("\n"))
		if !ok {
			break
		}
		l.partial = rest
		if url, ok := servingURL(string(line)); ok {
			l.found, l.partial = true, nil
			l.endpointLocked() <- url
			return
		}
	}
	if len(l.partial) > logCap {
		l.partial = nil // a runaway line: never the one we want
	}
}

// String returns what the Log kept: the last 64 KiB of the log at most.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// served returns a channel that receives the MCP endpoint once the example
// said where it serves.
func (l *Log) served() <-chan string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.endpointLocked()
}

func (l *Log) endpointLocked() chan string {
	if l.endpoint == nil {
		l.endpoint = make(chan string, 1)
	}
	return l.endpoint
}

// servingURL finds the url attribute of the example's log line
// `msg="serving MCP over Streamable HTTP" url=http://127.0.0.1:PORT/mcp`.
// Any other address is refused: the tests talk to loopback only.
func servingURL(line string) (string, bool) {
	if !strings.Contains(line, `msg="serving MCP over Streamable HTTP"`) {
		return "", false
	}
	for field := range strings.FieldsSeq(line) {
		if url, ok := strings.CutPrefix(field, "url="); ok && strings.HasPrefix(url, "http://127.0.0.1:") {
			return url, true
		}
	}
	return "", false
}
