package load

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A scale is the size of one run.
type scale struct {
	// legacySessions hold a GET stream on 2025-11-25; listenSessions
	// subscribe with subscriptions/listen on 2026-07-28. Each watches
	// plan.perSession() URIs.
	legacySessions, listenSessions int
	plan                           plan
	// writesPerSecond for writeFor, from one writer session.
	writesPerSecond int
	writeFor        time.Duration
}

// writes is how many writes the run makes.
func (s scale) writes() int { return s.writesPerSecond * int(s.writeFor/time.Second) }

// sessions is how many subscribing sessions the run opens.
func (s scale) sessions() int { return s.legacySessions + s.listenSessions }

// budget bounds the run from connecting the first client to the final
// check: a minute, the writes, and setting up the sessions, at 2 ms a
// subscription (about twice what it takes on two busy cores); never less
// than 90 s.
func (s scale) budget() time.Duration {
	setup := time.Duration(s.sessions()*s.plan.perSession()) * 2 * time.Millisecond
	return max(90*time.Second, time.Minute+s.writeFor+setup)
}

// The flags of a run other than CI's, after -args:
//
//	go test -run '^TestLoad$' -v ./... -args -size=50k
var (
	sizeFlag = flag.String("size", "", "the run's size: 4k (200 sessions x 20 subscriptions), 50k (1000 x 50) or SESSIONSxSUBSCRIPTIONS "+
		"(subscriptions 20 or 50), all legacy sessions; default: CI's run")
	rateFlag = flag.Int("writes-per-second", 0, "writes a second, with -size (default 20)")
	forFlag  = flag.Duration("write-for", 0, "how long the writer writes, with -size (default 30s)")
	// rereadersFlag is how many re-reads of one session may be in flight
	// at once: an agent that re-reads each notified URI as soon as it
	// hears of it. The more a session's POSTs overlap its notifications,
	// the likelier mcp-go's forwarder takes one to drop; README.md says
	// how often 8 and 4 caught an adapter that delivered through mcp-go's
	// session channel. serverCPUsFlag pins the example to CPUs of its own,
	// so that, with the test itself started under taskset on the others,
	// the server's latency is seen apart from the clients' CPU.
	rereadersFlag  = flag.Int("rereaders", 8, "re-reads of one session in flight at most")
	keptMiBFlag    = flag.Int("kept-mib", -1, "passed to the example as its -kept-mib (0: no kept results, every read runs its command); default: the example's")
	serverCPUsFlag = flag.String("server-cpus", "", "`list` of CPUs to pin the example to, as taskset -c takes it (0, or 2-3); default: not pinned")
)

// runScale is the run the flags ask for: CI's (ciScale) unless -size says
// otherwise.
func runScale() (scale, error) {
	if *sizeFlag == "" {
		if *rateFlag != 0 || *forFlag != 0 {
			return scale{}, fmt.Errorf("-writes-per-second and -write-for need -size")
		}
		return ciScale(), nil
	}
	return parseScale(*sizeFlag, *rateFlag, *forFlag)
}

// parseScale reads -size, and the writer's pace (0 for the defaults: 20
// writes a second for 30 s).
func parseScale(size string, perSecond int, writeFor time.Duration) (scale, error) {
	switch size {
	case "4k":
		size = "200x20"
	case "50k":
		size = "1000x50"
	}
	sessions, subs, ok := strings.Cut(size, "x")
	n, err1 := strconv.Atoi(sessions)
	m, err2 := strconv.Atoi(subs)
	p, known := plans[m]
	switch {
	case !ok || err1 != nil || err2 != nil || n < 1:
		return scale{}, fmt.Errorf("-size %q: want 4k, 50k or SESSIONSxSUBSCRIPTIONS, such as 500x50", size)
	case !known:
		return scale{}, fmt.Errorf("-size %q: %d subscriptions a session; the plans have 20 or 50", size, m)
	case perSecond < 0 || writeFor < 0:
		return scale{}, fmt.Errorf("-writes-per-second %d, -write-for %v: want positive values", perSecond, writeFor)
	}
	sc := scale{legacySessions: n, plan: p, writesPerSecond: cmpOr(perSecond, 20), writeFor: cmpOr(writeFor, 30*time.Second)}
	if sc.writes() < 1 {
		return scale{}, fmt.Errorf("-writes-per-second %d for -write-for %v makes no write", sc.writesPerSecond, sc.writeFor)
	}
	return sc, nil
}

func cmpOr[T comparable](v, otherwise T) T {
	var zero T
	if v == zero {
		return otherwise
	}
	return v
}

func TestParseScale(t *testing.T) {
	tests := []struct {
		size      string
		perSecond int
		writeFor  time.Duration
		want      scale
		wantErr   string
	}{
		{size: "4k", want: scale{legacySessions: 200, plan: plans[20], writesPerSecond: 20, writeFor: 30 * time.Second}},
		{size: "50k", want: scale{legacySessions: 1000, plan: plans[50], writesPerSecond: 20, writeFor: 30 * time.Second}},
		{size: "500x50", perSecond: 40, writeFor: 10 * time.Second, want: scale{legacySessions: 500, plan: plans[50], writesPerSecond: 40, writeFor: 10 * time.Second}},
		{size: "500x30", wantErr: "30 subscriptions a session"},
		{size: "big", wantErr: `-size "big"`},
		{size: "0x20", wantErr: `-size "0x20"`},
		{size: "10x20", perSecond: -1, wantErr: "positive"},
		{size: "10x20", writeFor: 10 * time.Millisecond, wantErr: "makes no write"},
	}
	for _, tt := range tests {
		got, err := parseScale(tt.size, tt.perSecond, tt.writeFor)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseScale(%q, %d, %v) = %+v, %v; want an error with %q", tt.size, tt.perSecond, tt.writeFor, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseScale(%q, %d, %v) = %+v, %v; want %+v", tt.size, tt.perSecond, tt.writeFor, got, err, tt.want)
		}
	}
	if b := ciScale().budget(); b != 90*time.Second {
		t.Errorf("CI's run has a budget of %v, want 90s", b)
	}
	if sc, _ := parseScale("50k", 0, 0); sc.budget() != 190*time.Second {
		t.Errorf("the 50k run has a budget of %v, want 190s", sc.budget())
	}
}
