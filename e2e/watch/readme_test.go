package watch

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestREADMEWatch runs the README's watch command against the example, as
// the README shows it (with the example's port in place of 8080), makes the
// write its Inspector command makes, and checks that the tool prints what
// the README shows, times aside.
func TestREADMEWatch(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var watchArgs []string
	var write, want string
	for _, b := range fenced(string(readme)) {
		switch {
		case b.lang == "sh" && watchArgs == nil:
			if rest, ok := strings.CutPrefix(strings.TrimSpace(b.code), "go run ./cmd/mcplive-watch "); ok {
				watchArgs = shellWords(t, rest)
			}
		case b.lang == "sh" && watchArgs != nil && write == "" && strings.Contains(b.code, "tools/call"):
			write = strings.TrimSpace(b.code)
		case b.lang == "text" && write != "" && want == "":
			want = b.code
		}
	}
	if watchArgs == nil || write == "" || want == "" {
		t.Fatalf("README.md no longer shows, in this order, a `go run ./cmd/mcplive-watch` command, an Inspector tools/call, and what the watch prints (a ```text block): found %q, %q, %q", watchArgs, write, want)
	}

	endpoint := example.StartHTTP(t)
	for i, arg := range watchArgs {
		if arg == "http://127.0.0.1:8080/mcp" {
			watchArgs[i] = endpoint
		}
	}
	p := startToolOnePipe(t, watchArgs...)
	p.stdout.waitFor(t, watchingLine, "line saying it watches")

	tool, args := inspectorCall(t, write)
	callTool(t, endpoint, tool, args)
	want = normalizeTimes(want)
	p.stdout.waitFor(t, regexp.MustCompile(regexp.QuoteMeta(want[strings.LastIndex(strings.TrimSuffix(want, "\n"), "\n")+1:])), "last line the README shows")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != 0 {
		t.Errorf("exit status %d after SIGINT, want 0", code)
	}
	if got := normalizeTimes(p.stdout.String()); !strings.HasSuffix(got, want) {
		t.Errorf("the watch printed:\n%s\nit ends with what README.md shows? want:\n%s\n(times replaced by TIME)", got, want)
	}
}

var printedTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`)

func normalizeTimes(s string) string { return printedTime.ReplaceAllString(s, "TIME") }

// inspectorCall returns the tool and the arguments of an Inspector command
// line (… --method tools/call --tool-name N --tool-arg k=v …). Like the
// Inspector, it takes a value that parses as JSON as that JSON, and any
// other as a string.
func inspectorCall(t *testing.T, line string) (string, map[string]any) {
	t.Helper()
	words := shellWords(t, line)
	var tool string
	args := map[string]any{}
	for i := 0; i+1 < len(words); i++ {
		switch words[i] {
		case "--tool-name":
			tool = words[i+1]
		case "--tool-arg":
			k, v, _ := strings.Cut(words[i+1], "=")
			var value any
			if json.Unmarshal([]byte(v), &value) != nil {
				value = v
			}
			args[k] = value
		}
	}
	if tool == "" {
		t.Fatalf("no --tool-name in %q", line)
	}
	return tool, args
}

// shellWords splits a command line as a shell would, for the quoting the
// README uses: words separated by spaces, single-quoted strings.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

type block struct{ lang, code string }

// fenced returns the fenced blocks of a Markdown page.
func fenced(md string) []block {
	var blocks []block
	var open *block
	sc := bufio.NewScanner(strings.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case open == nil && strings.HasPrefix(trimmed, "```"):
			open = &block{lang: strings.TrimPrefix(trimmed, "```")}
		case open != nil && trimmed == "```":
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.code += line + "\n"
		}
	}
	return blocks
}
