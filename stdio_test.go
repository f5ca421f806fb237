package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stdioExchange serves a fresh adapter through ServeStdio, writes lines
// after an initialize, and returns the error (nil for a result) of each
// response by id ("null" for those without one) once the responses to the
// initialize and to a ping with id "next", written after lines, arrived:
// mcp-go answers concurrently, in any order.
func stdioExchange(t *testing.T, lines ...string) map[string][]json.RawMessage {
	t.Helper()
	a := Wrap(server.NewMCPServer("stdio", "1"))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := a.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		done <- err
	}()
	go func() {
		lines = append([]string{
			`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}, append(lines, `{"jsonrpc":"2.0","id":"next","method":"ping"}`)...)
		for _, l := range lines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				return
			}
		}
	}()
	got := map[string][]json.RawMessage{}
	br := bufio.NewReader(outR)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the output: %v", err)
		}
		var r struct {
			ID    json.RawMessage `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("output line %.200q: %v", line, err)
		}
		got[string(r.ID)] = append(got[string(r.ID)], r.Error)
		if len(got[`"init"`]) > 0 && len(got[`"next"`]) > 0 && len(got) == 3 {
			break
		}
	}
	inW.Close()
	go io.Copy(io.Discard, br)
	if err := <-done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	return got
}

// ServeStdio answers what mcp-go would mishandle on stdio: a line longer
// than maxStdioLine (mcp-go reads a line whole, however long) and a batch
// (mcp-go calls valid JSON a parse error), each with -32600 and the request's
// id where the line shows it.
func TestServeStdioRefusesLongLinesAndBatches(t *testing.T) {
	pad := strings.Repeat("x", maxStdioLine)
	for _, tc := range []struct {
		name, line, id, message string
	}{
		{"long request", `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"` + pad + `"}}`, `7`, "message too large"},
		{"long request, id after params", `{"jsonrpc":"2.0","method":"ping","params":{"pad":"` + pad + `"},"id":8}`, `null`, "message too large"},
		{"long garbage", pad + pad, `null`, "message too large"},
		{"long response of the client's", `{"jsonrpc":"2.0","id":1,"result":{"pad":"` + pad + `"}}`, `null`, "message too large"},
		{"batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, `null`, "batches are not supported"},
		{"batch after blanks", " \t[]", `null`, "batches are not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stdioExchange(t, tc.line)
			if len(got[tc.id]) != 1 {
				t.Fatalf("responses by id: %v; want one for %s", got, tc.id)
			}
			var e mcp.JSONRPCErrorDetails
			if err := json.Unmarshal(got[tc.id][0], &e); err != nil || e.Code != mcp.INVALID_REQUEST || !strings.Contains(e.Message, tc.message) {
				t.Errorf("error = %s; want -32600 saying %q", got[tc.id][0], tc.message)
			}
		})
	}
	// A line just within the limit is served.
	line := `{"jsonrpc":"2.0","id":10,"method":"ping","params":{"pad":""}}`
	line = line[:len(line)-3] + strings.Repeat("x", maxStdioLine-len(line)) + line[len(line)-3:]
	if got := stdioExchange(t, line); len(got["10"]) != 1 || string(got["10"][0]) != "" {
		t.Errorf("a line of exactly maxStdioLine bytes was answered %s", got["10"])
	}
}

// feedReader hands out what is sent on feed, one send a Read, and reports
// on reading each Read that starts.
type feedReader struct {
	feed    chan string
	reading chan struct{}
}

func (r *feedReader) Read(p []byte) (int, error) {
	r.reading <- struct{}{}
	s, ok := <-r.feed
	if !ok {
		return 0, io.EOF
	}
	return copy(p, s), nil
}

// mcp-go's stdio server reads in on a goroutine that outlives Listen when
// ctx ends, and writes notifications on one that outlives it too: out
// belongs to the caller again once ServeStdio returned, and nothing may be
// written to it then.
func TestServeStdioWritesNothingAfterItReturned(t *testing.T) {
	a := Wrap(server.NewMCPServer("stdio", "1"))
	in := &feedReader{feed: make(chan string), reading: make(chan struct{})}
	defer close(in.feed)
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.ServeStdio(ctx, in, &out) }()
	<-in.reading // mcp-go waits for a line
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("ServeStdio = %v, want context.Canceled", err)
	}
	before := string(out.bytes())
	// The reader left behind gets a line that the edge answers itself.
	in.feed <- "[]\n"
	<-in.reading // it has dealt with the line and reads on
	if after := string(out.bytes()); after != before {
		t.Errorf("written to out after ServeStdio returned: %q", strings.TrimPrefix(after, before))
	}

	// The rewriter drops what comes after close, whatever writes it.
	var b bytes.Buffer
	w := &lineRewriter{out: &b, box: edgeTestBox()}
	w.close()
	for _, p := range []string{edgeTestError(`1`) + "\n", "partial", `{"jsonrpc":"2.0","method":"x"}` + "\n"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Errorf("Write after close = %d, %v; want %d, nil", n, err, len(p))
		}
	}
	if b.Len() != 0 {
		t.Errorf("the rewriter wrote %q after close", b.String())
	}
}

// onceErrReader fails once, then blocks as a stream that has nothing more
// would: the lineReader must report the failure, not read again.
type onceErrReader struct{ failed bool }

func (r *onceErrReader) Read([]byte) (int, error) {
	if r.failed {
		select {}
	}
	r.failed = true
	return 0, io.ErrUnexpectedEOF
}

// The lineReader passes lines within the bound as they are, and what in cut
// short with in's error after it.
func TestLineReaderPassesLinesAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		err            error
	}{
		{"lines", "{\"a\":1}\n\r\n{\"b\":2}\r\n", "{\"a\":1}\n\r\n{\"b\":2}\r\n", io.EOF},
		{"cut short", "{\"a\":1}\n{\"b\"", "{\"a\":1}\n{\"b\"", io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			in := io.MultiReader(strings.NewReader(tc.in), &onceErrReader{})
			if tc.err == io.EOF {
				in = strings.NewReader(tc.in)
			}
			r := &lineReader{in: bufio.NewReaderSize(in, 16), out: &out}
			var got []byte
			p := make([]byte, 3)
			var err error
			for err == nil {
				var n int
				n, err = r.Read(p)
				got = append(got, p[:n]...)
			}
			if string(got) != tc.want || err != tc.err || out.Len() != 0 {
				t.Errorf("read %q, %v, answered %q; want %q, %v, nothing", got, err, out.String(), tc.want, tc.err)
			}
		})
	}
}
