package exampleproc

import (
	"strings"
	"testing"
)

// servingLine is the example's line, as its slog text handler writes it.
const servingLine = `time=2026-01-02T03:04:05.000Z level=INFO msg="serving MCP over Streamable HTTP" url=http://127.0.0.1:41234/mcp health=http://127.0.0.1:41234/healthz`

func TestServingURL(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"the example's line", servingLine, "http://127.0.0.1:41234/mcp"},
		{"another message", `level=INFO msg="serving operators" url=http://127.0.0.1:41234/mcp`, ""},
		{"no url", `level=INFO msg="serving MCP over Streamable HTTP" health=http://127.0.0.1:1/healthz`, ""},
		{"not loopback", `level=INFO msg="serving MCP over Streamable HTTP" url=http://0.0.0.0:41234/mcp`, ""},
		{"a url-like health", `level=INFO msg="serving MCP over Streamable HTTP" health=url=http://127.0.0.1:1/x`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := servingURL(tt.line)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("servingURL(%q) = %q, %v; want %q", tt.line, got, ok, tt.want)
			}
		})
	}
}

// TestLogFindsTheEndpoint writes the log in pieces that split lines, after
// lines that must not count, and a runaway line longer than the Log keeps.
func TestLogFindsTheEndpoint(t *testing.T) {
	var log Log
	pieces := []string{
		"level=INFO msg=opened db=:memory:\nlevel=INFO msg=\"serving ope",
		"rators\" url=http://127.0.0.1:1/mcp\n",
		strings.Repeat("x", logCap+1),
		strings.Repeat("y", 10) + "\n",
		servingLine[:30],
		servingLine[30:] + "\nlevel=INFO msg=later url=http://127.0.0.1:2/mcp\n",
	}
	for i, p := range pieces {
		if n, err := log.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write of piece %d = %d, %v; want %d, nil", i, n, err, len(p))
		}
		if i < len(pieces)-1 {
			select {
			case url := <-log.served():
				t.Fatalf("endpoint %q found after piece %d, before the serving line ended", url, i)
			default:
			}
		}
	}
	select {
	case url := <-log.served():
		if url != "http://127.0.0.1:41234/mcp" {
			t.Errorf("endpoint %q, want http://127.0.0.1:41234/mcp", url)
		}
	default:
		t.Fatal("no endpoint after the serving line")
	}
}

func TestLogKeepsTheTail(t *testing.T) {
	var log Log
	log.Write([]byte("the start, dropped\n"))
	tail := strings.Repeat("z", logCap-5) + "end\n"
	log.Write([]byte(tail))
	if got := log.String(); len(got) != logCap || !strings.HasSuffix(got, tail) {
		t.Errorf("kept %d bytes ending %q; want the last %d, ending with the last write", len(got), got[max(0, len(got)-20):], logCap)
	}
	huge := strings.Repeat("w", 2*logCap)
	log.Write([]byte(huge))
	if got := log.String(); got != huge[logCap:] {
		t.Errorf("after a write of %d bytes kept %d; want its last %d", len(huge), len(got), logCap)
	}
}
