package leakcheck

import (
	"slices"
	"strings"
	"testing"
)

const sampleDump = `goroutine 21 [running]:
x.TestDump.func1(0xc0000d8488?)
	/src/x/x_test.go:3 +0x47
testing.tRunner(0xc0000d8488, 0x6541d8)
	/go/src/testing/testing.go:2036 +0x21d
created by testing.(*T).Run in goroutine 20
	/go/src/testing/testing.go:2101 +0xb13

goroutine 1 [chan receive, 3 minutes]:
testing.(*T).Run(0xc0000d8008, {0x6467a7, 0x8}, 0x654130)
	/go/src/testing/testing.go:2109 +0xb3e
main.main()
	_testmain.go:46 +0x165

goroutine 7 gp=0xc000002380 m=nil [select, locked to thread]:
example.com/p.(*server[...]).loop(...)
	/src/p/p.go:10
...additional frames elided...
created by example.com/p.Start
	/src/p/p.go:5 +0x1f
`

func TestParse(t *testing.T) {
	got := parse([]byte(sampleDump))
	want := []goroutine{
		{id: 21, state: "running", funcs: []string{"x.TestDump.func1", "testing.tRunner"}, creator: "testing.(*T).Run"},
		{id: 1, state: "chan receive, 3 minutes", funcs: []string{"testing.(*T).Run", "main.main"}},
		{id: 7, state: "select, locked to thread", funcs: []string{"example.com/p.(*server[...]).loop"}, creator: "example.com/p.Start"},
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %d goroutines, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.id != w.id || g.state != w.state || !slices.Equal(g.funcs, w.funcs) || g.creator != w.creator {
			t.Errorf("goroutine %d:\n got %+v\nwant %+v", i, g, w)
		}
		if !strings.HasPrefix(g.trace, "goroutine ") || strings.Contains(g.trace, "\n\n") {
			t.Errorf("goroutine %d: trace is not its own block: %q", i, g.trace)
		}
	}
}

func TestParseSkipsWhatIsNotAGoroutine(t *testing.T) {
	for _, dump := range []string{
		"",
		"panic: boom\n\nmain.main()",
		"goroutine x [running]:\nmain.main()",
		"goroutine 3 running:\nmain.main()",
	} {
		if got := parse([]byte(dump)); len(got) != 0 {
			t.Errorf("parse(%q) = %+v, want nothing", dump, got)
		}
	}
}

func TestParseOfTheRealDump(t *testing.T) {
	all := parse(dump())
	self := currentID()
	var me *goroutine
	for i := range all {
		if all[i].id == self {
			me = &all[i]
		}
	}
	if me == nil {
		t.Fatalf("goroutine %d is not in the dump: %+v", self, all)
	}
	if me.state != "running" || me.top() != "github.com/mcplive/adapter/internal/leakcheck.dump" ||
		!me.calls("github.com/mcplive/adapter/internal/leakcheck.TestParseOfTheRealDump") || me.creator != "testing.(*T).Run" {
		t.Errorf("this goroutine parsed as %+v", *me)
	}
}

func TestIgnored(t *testing.T) {
	for _, tc := range []struct {
		block string
		want  bool
	}{
		{"goroutine 5 [chan receive]:\ntesting.(*T).Run(0x1)\n\tt.go:1", true},
		{"goroutine 5 [chan receive]:\ntesting.(*T).Parallel(0x1)\n\tt.go:1", true},
		{"goroutine 5 [chan receive]:\ntesting.RunTests(0x1)\n\tt.go:1", true},
		{"goroutine 5 [chan receive]:\ntesting.runFuzzing(0x1)\n\tt.go:1", true},
		{"goroutine 5 [chan receive]:\ntesting.runFuzzTests(0x1)\n\tt.go:1", true},
		// A test still running is not waiting on the runner.
		{"goroutine 5 [running]:\ntesting.(*T).Run(0x1)\n\tt.go:1", false},
		{"goroutine 5 [chan receive]:\nx.wait(0x1)\n\tx.go:1\ntesting.(*T).Run(0x1)\n\tt.go:1", false},
		{"goroutine 5 [syscall]:\nos/signal.signal_recv()\n\ts.go:1\nos/signal.loop()\n\ts.go:2", true},
		{"goroutine 5 [select]:\nos/signal.loop()\n\ts.go:2", true},
		{"goroutine 5 [runnable]:\nos.(*file).close(0x1)\n\tf.go:1\ncreated by runtime.createfing in goroutine 1\n\tm.go:1", true},
		{"goroutine 5 [chan receive]:\nruntime.ReadTrace()\n\tt.go:1\nruntime/trace.Start.func1()\n\tt.go:2\ncreated by runtime/trace.Start in goroutine 1\n\tt.go:3", true},
		// runtime/... is not runtime.
		{"goroutine 5 [select]:\nx.f()\n\tx.go:1\ncreated by runtime/pprof.StartCPUProfile in goroutine 1\n\tp.go:1", false},
		{"goroutine 5 [select]:\nx.f()\n\tx.go:1\ncreated by x.g in goroutine 1\n\tx.go:2", false},
	} {
		g, ok := parseBlock(tc.block)
		if !ok {
			t.Fatalf("parseBlock(%q) failed", tc.block)
		}
		if got := ignored(g); got != tc.want {
			t.Errorf("ignored(%q) = %v, want %v", tc.block, got, tc.want)
		}
	}
}
