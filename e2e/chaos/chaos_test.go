package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

const (
	// readyBound bounds how long the clients take to connect, subscribe
	// and read every URI once, before the writes.
	readyBound = 30 * time.Second
	// settleBound is how soon after the last write every subscription must
	// hold the final state: a GET stream cut at the last write reopens
	// 1 to 2 s later (go-sdk's backoff is 1 s plus up to 1 s of jitter),
	// and what it resumes is read at once.
	settleBound = 10 * time.Second
	// runBudget bounds the run from the first client to the final check.
	runBudget = 2 * time.Minute
	// examplesShown bounds how many stale subscriptions a failure lists.
	examplesShown = 10
)

// A member is one client with its own proxy.
type member struct {
	log   *clientLog
	proxy *proxy
	cuts  *cutTimes
	sdk   *sdkClient // nil for a TypeScript client
}

// TestChaos runs the example behind one TCP proxy per client, in this
// process, and cuts every client's connections at random, at least once
// every 5 s, with resets, clean closes and silent drops, while a writer
// past the proxies renames the customers the clients watch 20 times a
// second for 30 s, then not at all for 15 s, then once each. The clients are real: go-sdk on both protocol eras and
// the TypeScript clients (@modelcontextprotocol/sdk 1.x,
// @modelcontextprotocol/client 2.x on both eras), each an application that
// re-reads what it is told changed and reconnects as its library lets it.
// After the last write, every subscription's last notification must be
// followed by a read that shows the final state.
func TestChaos(t *testing.T) {
	sc := runScale()
	seed := chaosSeed(t)
	// MCPLIVE_CHAOS_LIBRARY_RESUME=1 leaves the clients' resumption as
	// the libraries do it: a GET stream reopened without Last-Event-ID
	// stays so.
	fixResume := os.Getenv("MCPLIVE_CHAOS_LIBRARY_RESUME") != "1"
	var node, modules string
	if sc.ts {
		var why string
		if node, modules, why = nodeModules(); why != "" {
			if os.Getenv("MCPLIVE_REQUIRE_NODE") == "1" {
				t.Fatalf("MCPLIVE_REQUIRE_NODE=1, but the TypeScript clients cannot run: %s", why)
			}
			t.Logf("TypeScript clients skipped (MCPLIVE_REQUIRE_NODE=1 makes this fail): %s", why)
			sc.ts = false
		}
	}
	began := time.Now()
	endpoint := example.StartHTTP(t)
	target, err := hostPort(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runBudget)
	defer cancel()

	writer, writerRT, err := direct(ctx, endpoint)
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	defer func() {
		writer.Close()
		writerRT.CloseIdleConnections()
	}()
	if err := checkSeed(ctx, writer); err != nil {
		t.Fatalf("writer: %v", err)
	}

	progress := make(chan struct{}, 1)
	orphan := newClientLog("tsclients.mjs", "", nil, progress)
	var members []*member
	clientCtx, stopClients := context.WithCancel(ctx)
	var clients sync.WaitGroup
	// Torn down in order: the clients say goodbye through their proxies,
	// then the proxies close.
	defer func() {
		stopClients()
		clients.Wait()
		for _, m := range members {
			m.proxy.Close()
		}
	}()
	join := func(kind string) *member {
		n := len(members)
		p, err := startProxy(target, clientIP(n))
		if err != nil {
			t.Fatal(err)
		}
		m := &member{proxy: p, cuts: &cutTimes{},
			log: newClientLog(fmt.Sprintf("%s #%d", kind, n), kind, clientURIs(n), progress)}
		members = append(members, m)
		return m
	}
	for _, era := range []string{legacyEra, modernEra} {
		for range sc.perKind {
			m := join("go-sdk " + era)
			m.sdk = newSDKClient(m.log, era, "http://"+m.proxy.Addr()+"/mcp", fixResume)
			clients.Go(func() { m.sdk.run(clientCtx) })
		}
	}
	var ts *tsProcess
	if sc.ts {
		var configs []tsConfig
		logs := make(map[string]*clientLog)
		for _, k := range tsKinds {
			for range sc.perKind {
				m := join(k.kind)
				configs = append(configs, tsConfig{Name: m.log.name, Kind: k.script, URL: "http://" + m.proxy.Addr() + "/mcp", URIs: m.log.uris, FixResume: fixResume})
				logs[m.log.name] = m.log
			}
		}
		ts = startTS(t, node, modules, configs, logs, orphan)
		defer ts.stop(t) // before the proxies close
	}
	if err := awaitReady(ctx, members, ts); err != nil {
		t.Fatal(err)
	}

	// The chaos, all along the writes and the quiet between them.
	counts := &cutCounts{}
	quiet, stop := make(chan struct{}), make(chan struct{})
	var chaos sync.WaitGroup
	for i, m := range members {
		rng := rand.New(rand.NewPCG(seed, uint64(i+1)))
		chaos.Go(func() { runChaos(ctx, m.proxy, rng, quiet, stop, counts, m.cuts) })
	}
	writes := loadkit.NewWriteLog()
	plan := writePlan(sc.writes()+watched, rand.New(rand.NewPCG(seed, 0)))
	chaosFrom := time.Now()
	span, err := write(ctx, writer, plan[:sc.writes()], sc.writesPerSecond, writes)
	var quietFrom, quietTo time.Time
	if err == nil {
		// No writes: the streams carry nothing but keep-alives while
		// they are cut, and resumed streams resume with nothing new.
		close(quiet)
		quietFrom = time.Now()
		pause(ctx, sc.quietFor)
		quietTo = time.Now()
		_, err = write(ctx, writer, plan[sc.writes():], sc.writesPerSecond, writes)
	}
	close(stop)
	chaos.Wait()
	lastWrite := time.Now()
	if err != nil {
		t.Fatalf("writer: %v", err)
	}

	final := finalNames(plan)
	truth, err := readTruth(ctx, writer)
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	for uri, name := range final {
		if truth[uri] != name {
			t.Fatalf("after the writes %s reads %q, want the last name written, %q", uri, truth[uri], name)
		}
	}
	settled := awaitSettle(ctx, members, final, lastWrite.Add(settleBound), progress)

	fig := measure(members, final, writes, counts, chaosFrom, lastWrite, quietFrom, quietTo)
	fig.seed, fig.writes, fig.span, fig.settled, fig.wall = seed, len(plan), span, settled, time.Since(began)
	fig.quietFor = quietTo.Sub(quietFrom)
	fig.problems = append(fig.problems, orphan.problems...)
	fig.nProblems += orphan.nProblem
	t.Log(fig.byKind())
	fmt.Println(fig.summary()) // CI shows this line with go test -v
	judge(t, fig, sc)
	if fig.stale > 0 {
		shown := 0
		for _, m := range members {
			if n, _, _ := m.log.stale(final); n > 0 && shown < 2 {
				shown++
				t.Logf("%s, from the end of the quiet:\n%s", m.log.name, m.log.timeline(quietTo.Add(-time.Second), m.cuts.list()))
			}
		}
	}
}

// chaosSeed is the run's seed: MCPLIVE_CHAOS_SEED, or drawn. It decides
// the cuts (which, how, after how long) and the order of the writes; the
// timing of the machine decides the rest.
func chaosSeed(t *testing.T) uint64 {
	if s := os.Getenv("MCPLIVE_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MCPLIVE_CHAOS_SEED=%q is not a number", s)
		}
		return seed
	}
	return rand.Uint64()
}

// hostPort is the host and port of an endpoint URL.
func hostPort(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// clientIP is client n's own loopback address, 127.3.x.y: the example
// caps subscriptions per client address.
func clientIP(n int) net.IP { return net.IPv4(127, 3, byte(n>>8), byte(1+n%250)) }

// awaitReady waits until every client is subscribed and has read every
// URI once.
func awaitReady(ctx context.Context, members []*member, ts *tsProcess) error {
	ctx, cancel := context.WithTimeout(ctx, readyBound)
	defer cancel()
	for _, m := range members {
		if m.sdk == nil {
			continue
		}
		select {
		case <-m.sdk.ready:
		case <-ctx.Done():
			return fmt.Errorf("%s was not subscribed with every URI read within %v", m.log.name, readyBound)
		}
	}
	if ts != nil {
		return ts.awaitReady(ctx)
	}
	return nil
}

// awaitSettle waits until no subscription is stale, re-checking whenever
// a read finishes, or until deadline. It returns how long after the last
// write (deadline less settleBound) that took; 0 if it did not happen.
func awaitSettle(ctx context.Context, members []*member, final map[string]string, deadline time.Time, progress <-chan struct{}) time.Duration {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		settled := true
		for _, m := range members {
			if n, _, _ := m.log.stale(final); n > 0 {
				settled = false
				break
			}
		}
		if settled {
			return time.Since(deadline.Add(-settleBound))
		}
		select {
		case <-progress:
		case <-timer.C:
			return 0
		case <-ctx.Done():
			return 0
		}
	}
}

// figures are what a run measured.
type figures struct {
	seed          uint64
	clients       int
	kinds         map[string]*kindFigures
	subscriptions int
	writes        int
	span          time.Duration // of the first writes, all but the last round
	quietFor      time.Duration
	cuts          cutSummary
	total         tally
	stale, behind int
	staleExamples []string
	settled       time.Duration
	wall          time.Duration
	problems      []string
	nProblems     int
	// fewestCuts is the fewest cuts a client had, longestGap the longest
	// time a client went uncut in the chaos.
	fewestCuts int
	longestGap time.Duration
}

type cutSummary struct {
	cuts, links, reset, close, silent int64
}

// kindFigures are the figures of one kind of client.
type kindFigures struct {
	clients int
	t       tally
	stale   int
}

// measure gathers the figures of a run: each client's tally and
// staleness, and the cuts.
func measure(members []*member, final map[string]string, writes *loadkit.WriteLog, counts *cutCounts, from, to, quietFrom, quietTo time.Time) figures {
	f := figures{clients: len(members), kinds: make(map[string]*kindFigures), fewestCuts: -1}
	f.cuts = cutSummary{counts.cuts.Load(), counts.links.Load(), counts.by[cutReset].Load(), counts.by[cutClose].Load(), counts.by[cutSilent].Load()}
	for _, m := range members {
		k := f.kinds[m.log.kind]
		if k == nil {
			k = &kindFigures{}
			f.kinds[m.log.kind] = k
		}
		k.clients++
		f.subscriptions += len(m.log.uris)
		t := m.log.tally(writes, quietFrom, quietTo)
		k.t = add(k.t, t)
		f.total = add(f.total, t)
		n, behind, ex := m.log.stale(final)
		k.stale += n
		f.stale += n
		f.behind += behind
		f.staleExamples = append(f.staleExamples, ex...)
		m.log.mu.Lock()
		f.problems = append(f.problems, m.log.problems...)
		f.nProblems += m.log.nProblem
		m.log.mu.Unlock()
		times := m.cuts.list()
		if f.fewestCuts < 0 || len(times) < f.fewestCuts {
			f.fewestCuts = len(times)
		}
		prev := from
		for _, at := range append(times, to) {
			f.longestGap = max(f.longestGap, at.Sub(prev))
			prev = at
		}
	}
	f.staleExamples = f.staleExamples[:min(len(f.staleExamples), examplesShown)]
	return f
}

// add sums two tallies.
func add(a, b tally) tally {
	a.notifications += b.notifications
	a.reads += b.reads
	a.reconnects += b.reconnects
	a.resumes += b.resumes
	a.afresh += b.afresh
	a.relistens += b.relistens
	a.sessions += b.sessions
	a.replays += b.replays
	a.extra += b.extra
	a.quiet += b.quiet
	a.retried += b.retried
	a.restored += b.restored
	a.dups += b.dups
	a.problems += b.problems
	a.latencies = append(a.latencies, b.latencies...)
	return a
}

func (f figures) summary() string {
	lat := slices.Sorted(slices.Values(f.total.latencies))
	kinds := make([]string, 0, len(f.kinds))
	for _, k := range slices.Sorted(maps.Keys(f.kinds)) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, f.kinds[k].clients))
	}
	settled := "never"
	if f.settled > 0 {
		settled = loadkit.Ms(f.settled).String()
	}
	t := f.total
	first := f.writes - watched
	return fmt.Sprintf("e2e/chaos: seed=%d clients=%d (%s) subscriptions=%d writes=%d (%d at %.1f/s over %.1fs, %.1fs quiet, a last round of %d) "+
		"cuts=%d (reset %d, close %d, silent %d; %d connections; fewest per client %d, longest uncut %v) "+
		"reconnects=%d (GET resumed %d, Last-Event-ID restored %d, GET afresh %d, re-listens %d, new sessions %d) "+
		"notifications=%d (replays %d, answering no new write %d, in the quiet %d) dup-ids=%d rereads=%d retried=%d "+
		"write-start-to-notification p50=%v p99=%v max=%v (n=%d) stale=%d (behind %d) settled-after-last-write=%s problems=%d wall=%v",
		f.seed, f.clients, strings.Join(kinds, ", "), f.subscriptions, f.writes, first, float64(first-1)/max(f.span.Seconds(), 1e-9), f.span.Seconds(), f.quietFor.Seconds(), watched,
		f.cuts.cuts, f.cuts.reset, f.cuts.close, f.cuts.silent, f.cuts.links, f.fewestCuts, loadkit.Ms(f.longestGap),
		t.reconnects, t.resumes, t.restored, t.afresh, t.relistens, t.sessions,
		t.notifications, t.replays, t.extra, t.quiet, t.dups, t.reads, t.retried,
		loadkit.Ms(loadkit.Percentile(lat, 50)), loadkit.Ms(loadkit.Percentile(lat, 99)), loadkit.Ms(loadkit.Percentile(lat, 100)), len(lat),
		f.stale, f.behind, settled, f.nProblems, f.wall.Round(100*time.Millisecond))
}

// byKind is a table of the figures of each kind of client.
func (f figures) byKind() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %7s %6s %7s %6s %7s %6s %8s %8s %8s %7s %8s %5s %9s %9s\n", "kind", "clients", "notes", "replays", "extra", "reads", "stale",
		"resumes", "restored", "afresh", "relist", "sessions", "dups", "p50", "p99")
	for _, k := range slices.Sorted(maps.Keys(f.kinds)) {
		kf := f.kinds[k]
		lat := slices.Sorted(slices.Values(kf.t.latencies))
		fmt.Fprintf(&b, "%-28s %7d %6d %7d %6d %7d %6d %8d %8d %8d %7d %8d %5d %9v %9v\n", k, kf.clients, kf.t.notifications, kf.t.replays, kf.t.extra, kf.t.reads, kf.stale,
			kf.t.resumes, kf.t.restored, kf.t.afresh, kf.t.relistens, kf.t.sessions, kf.t.dups,
			loadkit.Ms(loadkit.Percentile(lat, 50)), loadkit.Ms(loadkit.Percentile(lat, 99)))
	}
	return b.String()
}

// judge fails t for what a run's figures show went wrong.
func judge(t *testing.T, f figures, sc scale) {
	t.Helper()
	if f.stale > 0 {
		t.Errorf("%d of %d subscriptions are stale %v after the last write (%d told and not done re-reading); the first ones:\n  %s",
			f.stale, f.subscriptions, settleBound, f.behind, strings.Join(f.staleExamples, "\n  "))
	}
	if f.nProblems > 0 {
		t.Errorf("%d problems no cut explains; the first ones:\n  %s", f.nProblems, strings.Join(f.problems, "\n  "))
	}
	// Every client was cut at least once every 5 s, and came back and
	// heard of the writes.
	if want := int(sc.writeFor / (5 * time.Second)); f.fewestCuts < want || f.longestGap > 5*time.Second {
		t.Errorf("a client was cut %d times in %v of writes, and one went %v uncut; want at least %d, and one cut every 5 s",
			f.fewestCuts, sc.writeFor, f.longestGap, want)
	}
	for k, kf := range f.kinds {
		if kf.t.reconnects < kf.clients || kf.t.notifications == 0 || kf.t.reads == 0 {
			t.Errorf("%d clients of %s reconnected %d times, heard %d notifications, re-read %d times: the run exercised too little",
				kf.clients, k, kf.t.reconnects, kf.t.notifications, kf.t.reads)
		}
	}
}
