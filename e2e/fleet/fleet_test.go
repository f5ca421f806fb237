package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mark3labs/mcp-go/client"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
	"github.com/mcplive/adapter/e2e/internal/loadkit/mcpgoclient"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// fullNotify runs the NOTIFY fleet at the WAL fleet's size, to compare
// them: go test -run TestFleet ./... -args -full-notify
var fullNotify = flag.Bool("full-notify", false, "run the fleet on NOTIFY at full size too, not only on the WAL feed")

const (
	// instances run behind the balancer; victim is the one killed.
	instances = 3
	victim    = 1
	// backBound is how soon after the kill each of the killed instance's
	// clients must be subscribed again with every URI re-read, and
	// settleBound how soon after the last write every subscription must
	// hold the final state (README.md says why these).
	backBound   = 15 * time.Second
	settleBound = 10 * time.Second
	// keptUp is the p99 write-to-notification before the kill under which
	// the machine kept up with the load, and backBound is judged.
	keptUp = 500 * time.Millisecond
	// runBudget bounds the run from connecting the first client to the
	// final check; closing has bounds of its own.
	runBudget = 3 * time.Minute
	// setupParallelism is how many sessions connect and subscribe at once.
	setupParallelism = 8
	// examplesShown bounds how many stale subscriptions or unannounced
	// writes a failure lists.
	examplesShown = 10
)

// fleetRun is what the clients of a run share.
type fleetRun struct {
	problems *loadkit.Problems
	writes   *loadkit.WriteLog
	killedAt atomic.Int64  // unix nanoseconds of the kill; 0 before
	progress chan struct{} // a re-read finished (capacity 1: a nudge, not a count)
}

func (r *fleetRun) killed() bool { return r.killedAt.Load() != 0 }

func (r *fleetRun) progressed() {
	select {
	case r.progress <- struct{}{}:
	default:
	}
}

// TestFleet runs three instances of the example on one PostgreSQL behind
// HAProxy, with the balancer configuration the example ships, under
// hundreds of subscribing clients of both protocol eras and writes through
// every instance and straight into the database; kills one instance with
// SIGKILL halfway; and checks that its clients come back through the
// balancer and that every subscription ends holding the final state.
//
// It runs once on each change feed of the example (-feed). The WAL feed,
// the one to run in production, gets the full run (runScale); NOTIFY, the
// example's default, a small one (smallScale) with the same patterns and
// kill, which is enough to keep it working: its full run, measured over
// many runs, is in docs/many-instances.md, and running both in full would
// add a minute to CI for figures that do not change. Under the race
// detector both are small.
func TestFleet(t *testing.T) {
	notifyScale := smallScale()
	if *fullNotify {
		notifyScale = runScale()
	}
	for _, run := range []struct {
		feed string
		sc   scale
	}{
		{"wal", runScale()},
		{"notify", notifyScale},
	} {
		t.Run(run.feed, func(t *testing.T) { testFleet(t, run.feed, run.sc) })
	}
}

func testFleet(t *testing.T, feed string, sc scale) {
	haproxy := haproxyBinary(t)
	pg := pgtest.Start(t)
	durableCommits(t, pg)
	insts := make([]*exampleproc.Process, instances)
	servers := make([]string, instances)
	for i := range insts {
		// The balancer connects from 127.0.0.1: the instances take the
		// client's address from its X-Forwarded-For.
		insts[i] = example.Start(t, "-postgres", pg, "-feed", feed, "-trusted-proxy", "127.0.0.1")
		servers[i] = insts[i].Addr()
	}
	lb := startBalancer(t, haproxy, servers)
	t.Cleanup(directTransport.CloseIdleConnections)

	ctx, cancel := context.WithTimeout(context.Background(), runBudget)
	defer cancel()
	run := &fleetRun{problems: &loadkit.Problems{}, writes: loadkit.NewWriteLog(), progress: make(chan struct{}, 1)}
	defer run.problems.Report(t)

	// The checker reads the truth through the balancer, on 2026-07-28:
	// without a session, it cannot lose one to the kill.
	checker := plainClient(t, ctx, lb.URL, listenEra, run.problems, "checker")
	checkSeed(t, ctx, checker)
	writers := make([]*client.Client, instances)
	for i, inst := range insts {
		writers[i] = plainClient(t, ctx, inst.URL, legacyEra, run.problems, fmt.Sprintf("writer-%d", i))
	}
	db, err := pgxpool.New(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	names, err := customerNames(ctx, checker, loadkit.CustomerCount)
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	reread, stopRereads := context.WithCancel(ctx)
	subs, err := openSubscribers(ctx, reread, lb.URL, sc, names, run)
	defer closeSubscribers(subs, stopRereads, run.problems)
	if err != nil {
		t.Fatalf("open %d sessions through the balancer: %v", sc.sessions(), err)
	}
	before := placement(t, ctx, insts, subs)

	plan := loadkit.WritePlan(sc.writes(), names)
	w := newWriter(writers, db, sc.dbEvery)
	var killedAt time.Time
	kill := func() error {
		killedAt = time.Now()
		run.killedAt.Store(killedAt.UnixNano())
		return insts[victim].Kill()
	}
	counts, err := w.write(ctx, plan, sc.writesPerSecond, run.writes, sc.killAt(), victim, kill)
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	lastWrite := time.Now()

	truth, err := readTruth(ctx, checker, subs)
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	converged := awaitConvergence(ctx, subs, truth, lastWrite.Add(settleBound), run.progress)
	fig, staleExamples, unannouncedExamples := measure(subs, truth, run.writes.Counts(), killedAt)
	fig.feed, fig.instances, fig.writes, fig.converged = feed, instances, counts, converged
	fig.excused, fig.problems = run.problems.Excused.Load(), run.problems.Count()
	fig.feeds = feedStates(t, ctx, insts, db, feed)
	t.Log(fig.summary())
	fmt.Println(fig.summary()) // CI shows this line with go test -v

	judge(t, fig, sc, staleExamples, unannouncedExamples)
	judgeFailover(t, ctx, insts, subs, before, killedAt)
	judgeFeeds(t, fig.feeds, feed)
}

// judge fails t for what a run's figures show went wrong.
func judge(t *testing.T, fig figures, sc scale, staleExamples, unannouncedExamples []string) {
	t.Helper()
	if n := len(fig.unexplained); n > 0 {
		t.Errorf("%d legacy sessions on surviving instances saw errors after the kill, which does not explain them; the first ones:\n  %s",
			n, strings.Join(fig.unexplained[:min(n, examplesShown)], "\n  "))
	}
	if fig.stale > 0 {
		t.Errorf("%d of %d subscriptions are stale %v after the last write (%d told of their last change but not done re-reading, %d never told); the first ones:\n  %s",
			fig.stale, fig.subscriptions, settleBound, fig.behind, fig.stale-fig.behind, strings.Join(staleExamples, "\n  "))
	}
	// Each customer stays unchanged for this long after each write.
	period := time.Duration(loadkit.CustomerCount) * time.Second / time.Duration(sc.writesPerSecond)
	switch p99 := fig.latency(99); {
	case fig.unannounced == 0:
	case p99 < period/2:
		t.Errorf("%d writes were not announced to a customers_show subscriber that kept its connection before the customer's next write, %v later, or before the final check, though 99%% of notifications came within %v; the first ones:\n  %s",
			fig.unannounced, period, p99, strings.Join(unannouncedExamples, "\n  "))
	default:
		// From the client a late notification and a lost one look the
		// same until the customer's next write, and a starved machine
		// makes many late at once, which shows in the 99th percentile.
		// The final check still judges loss.
		t.Logf("%d writes were not announced before the customer's next write, %v later; not judged, since a p99 write-to-notification of %v shows a machine too slow for that bound",
			fig.unannounced, period, p99)
	}
	if fig.notifications == 0 || fig.rereads == 0 || fig.writes.viaDB == 0 || fig.writes.viaInstance == 0 {
		t.Errorf("%d notifications and %d re-reads for %d writes through instances and %d straight to the database: the run exercised too little",
			fig.notifications, fig.rereads, fig.writes.viaInstance, fig.writes.viaDB)
	}
	if n := fig.killedLegacy + fig.killedListen; n == 0 || n == sc.sessions() {
		t.Errorf("%d of %d sessions lost their connection to the killed instance; want some, not all", n, sc.sessions())
	}
	// Its listen clients named the versions they held on another
	// instance: that instance announces at once only what differs, and
	// its notification of an orders window, which no write changes, is
	// a problem (subscriber.updated). Every URI announced would mean the
	// instances name one result differently.
	if fig.killedListen > 0 && (fig.named == 0 || fig.announced >= fig.named) {
		t.Errorf("the killed instance's %d listen clients named %d versions listening again, and %d URIs were announced at once; want versions named, and fewer announced",
			fig.killedListen, fig.named, fig.announced)
	}
	if fig.newSessions != fig.killedLegacy {
		t.Errorf("%d of the killed instance's %d legacy sessions started a new session; want all: theirs died with it", fig.newSessions, fig.killedLegacy)
	}
	// A client that never came back failed the run already (its
	// reconnectBudget). How soon they came back is judged, as the
	// announcements are, only when the machine kept up before the kill:
	// reconnecting is some forty requests, each as slow as the machine.
	back := slices.Max(append(fig.back, 0))
	switch steady := loadkit.Percentile(slices.Sorted(slices.Values(fig.beforeKill)), 99); {
	case back <= backBound:
	case steady < keptUp:
		t.Errorf("a client of the killed instance took %v to be back, more than %v, though 99%% of notifications came within %v before the kill", back, backBound, steady)
	default:
		t.Logf("a client of the killed instance took %v to be back, more than %v; not judged, since a p99 write-to-notification of %v before the kill shows a machine too slow for that bound", back, backBound, steady)
	}
}

// before is where the balancer put the clients, as the instances tell it
// (placement).
type before struct {
	home    map[*subscriber]int // legacy sessions: the instance holding them
	metrics []instanceMetrics
}

// placement asks every instance, past the balancer, which legacy sessions
// it holds and how many subscriptions, and checks that the balancer spread
// the sessions over all of them and that they hold every subscription.
func placement(t *testing.T, ctx context.Context, insts []*exampleproc.Process, subs []*subscriber) before {
	t.Helper()
	b := before{home: make(map[*subscriber]int), metrics: make([]instanceMetrics, len(insts))}
	legacy := make([]int, len(insts))
	for _, s := range subs {
		if s.era != legacyEra {
			continue
		}
		home, err := sessionHome(ctx, insts, s.session())
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		b.home[s] = home
		legacy[home]++
	}
	total := 0
	for i, inst := range insts {
		m, err := scrape(ctx, inst.URL)
		if err != nil {
			t.Fatal(err)
		}
		b.metrics[i] = m
		total += m.subscriptions
		if legacy[i] == 0 {
			t.Errorf("instance %d holds no legacy session: the balancer did not spread them (legacy sessions per instance %v)", i, legacy)
		}
	}
	if want := len(subs) * subsPerSession; total != want {
		t.Errorf("the instances hold %d subscriptions, want %d", total, want)
	}
	return b
}

// judgeFailover checks that the clients that lost their connection are
// exactly the killed instance's, and that the survivors now hold every
// subscription, none refused.
func judgeFailover(t *testing.T, ctx context.Context, insts []*exampleproc.Process, subs []*subscriber, b before, killedAt time.Time) {
	t.Helper()
	lostListen, victimLegacy := 0, 0
	for _, s := range subs {
		o := s.outage(killedAt)
		if s.era == listenEra {
			if o.lost {
				lostListen++
			}
			continue
		}
		onVictim := b.home[s] == victim
		if onVictim {
			victimLegacy++
		}
		if o.lost != onVictim {
			t.Errorf("%s lived on instance %d and lost its connection: %v; want it lost exactly when its instance was killed", s.name, b.home[s], o.lost)
		}
	}
	if want := b.metrics[victim].subscriptions/subsPerSession - victimLegacy; lostListen != want {
		t.Errorf("%d listen clients lost their stream; the killed instance held %d subscriptions, %d legacy sessions: want %d",
			lostListen, b.metrics[victim].subscriptions, victimLegacy, want)
	}
	total := 0
	for i, inst := range insts {
		if i == victim {
			continue
		}
		m, err := scrape(ctx, inst.URL)
		if err != nil {
			t.Fatal(err)
		}
		total += m.subscriptions
		if m.refused != 0 {
			t.Errorf("instance %d refused %d subscriptions", i, m.refused)
		}
	}
	if b.metrics[victim].refused != 0 {
		t.Errorf("instance %d refused %d subscriptions before it was killed", victim, b.metrics[victim].refused)
	}
	if want := len(subs) * subsPerSession; total != want {
		t.Errorf("after the kill the surviving instances hold %d subscriptions, want %d: every client's, once", total, want)
	}
}

// plainClient connects a client without a stream, for writing or
// checking, and closes it when the test ends.
func plainClient(t *testing.T, ctx context.Context, url, era string, p *loadkit.Problems, name string) *client.Client {
	t.Helper()
	rt := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, IdleConnTimeout: idleConnTimeout}
	c, _, err := dial(ctx, url, rt, p, dialOptions{name: name, era: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close() // the writer of the killed instance cannot say goodbye: no matter
		rt.CloseIdleConnections()
	})
	return c
}

// checkSeed checks that the example holds the customers the plan
// assumes.
func checkSeed(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	text, err := mcpgoclient.ReadText(ctx, c, "app://customers_index?per_page=1")
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	var page struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal([]byte(text), &page); err != nil || page.Total != loadkit.CustomerCount {
		t.Fatalf("the example holds %.200s; the test assumes %d customers (examples/customers/seed.go)", text, loadkit.CustomerCount)
	}
}

// openSubscribers connects and subscribes every session of sc through the
// balancer at url, setupParallelism at a time, each from its own address
// (clientAddr); their streams last until ctx ends or they close, their
// re-readers and recovery until reread ends. It returns the sessions that
// it opened, which the caller closes, also when some failed.
func openSubscribers(ctx, reread context.Context, url string, sc scale, names map[int64]string, run *fleetRun) ([]*subscriber, error) {
	subs := make([]*subscriber, sc.sessions())
	errs := make([]error, len(subs))
	sem := make(chan struct{}, setupParallelism)
	var wg sync.WaitGroup
	for i := range subs {
		era, name := legacyEra, fmt.Sprintf("legacy-%d", i)
		if i >= sc.legacySessions {
			era, name = listenEra, fmt.Sprintf("listen-%d", i-sc.legacySessions)
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rt := newHTTPTransport(clientAddr(i))
			s, err := newSubscriber(ctx, url, rt, era, name, sessionURIs(i, names), run)
			if err != nil {
				rt.CloseIdleConnections()
				errs[i] = err
				return
			}
			s.rt = rt
			subs[i] = s // opened: closed by the caller even if subscribing fails
			errs[i] = s.subscribe(ctx, reread)
		})
	}
	wg.Wait()
	return slices.DeleteFunc(subs, func(s *subscriber) bool { return s == nil }), errors.Join(errs...)
}

// closeSubscribers stops the re-readers and closes every session.
func closeSubscribers(subs []*subscriber, stopRereads context.CancelFunc, p *loadkit.Problems) {
	p.Closing.Store(true)
	stopRereads()
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(s.close)
	}
	wg.Wait()
}

// readTruth reads every URI some subscriber watches, on the checker.
func readTruth(ctx context.Context, c *client.Client, subs []*subscriber) (map[string]string, error) {
	truth := make(map[string]string)
	for _, s := range subs {
		for _, uri := range s.uris {
			if _, ok := truth[uri]; ok {
				continue
			}
			text, err := mcpgoclient.ReadText(ctx, c, uri)
			if err != nil {
				return nil, err
			}
			truth[uri] = text
		}
	}
	return truth, nil
}

// awaitConvergence waits until every subscription's last read equals
// truth, re-checking whenever a re-read finishes, or until deadline. It
// returns how long after the deadline's start (the last write) that took,
// or 0 if it did not happen.
func awaitConvergence(ctx context.Context, subs []*subscriber, truth map[string]string, deadline time.Time, progress <-chan struct{}) time.Duration {
	start := deadline.Add(-settleBound)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		converged := true
		for _, s := range subs {
			if n, _, _ := s.stale(truth); n > 0 {
				converged = false
				break
			}
		}
		if converged {
			return time.Since(start)
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

// measure compares every subscriber's last reads with truth and its
// notifications with the writes of each customer, and gathers the
// figures, with examples of stale subscriptions and unannounced writes.
func measure(subs []*subscriber, truth map[string]string, writes map[int64]int, killedAt time.Time) (f figures, stale, unannounced []string) {
	for _, s := range subs {
		if s.era == legacyEra {
			f.legacySessions++
		} else {
			f.listenSessions++
		}
		f.subscriptions += len(s.uris)
		notifications, rereads, retries, before, after := s.counts()
		f.notifications += notifications
		f.rereads += rereads
		f.retries += retries
		f.latencies = append(append(f.latencies, before...), after...)
		f.beforeKill = append(f.beforeKill, before...)
		named, announced := s.relisten()
		f.named += named
		f.announced += announced
		n, behind, ex := s.stale(truth)
		f.stale += n
		f.behind += behind
		stale = append(stale, ex...)
		if what := s.unexplained(); what != "" {
			f.unexplained = append(f.unexplained, what)
		}
		o := s.outage(killedAt)
		switch {
		case !o.lost:
			// Only a client that kept its connection heard of every
			// write; the others re-read instead.
			n, ex = s.unannounced(writes)
			f.unannounced += n
			unannounced = append(unannounced, ex...)
			continue
		case s.era == legacyEra:
			f.killedLegacy++
		default:
			f.killedListen++
		}
		if o.newSession {
			f.newSessions++
		}
		if o.back {
			f.back = append(f.back, o.took)
			f.subscribedAgain = append(f.subscribedAgain, o.subscribed)
			if s.era == legacyEra {
				f.backLegacy = append(f.backLegacy, o.took)
			} else {
				f.backListen = append(f.backListen, o.took)
			}
		} else {
			f.back = append(f.back, time.Duration(1<<62)) // never: fails backBound
		}
	}
	return f, stale[:min(len(stale), examplesShown)], unannounced[:min(len(unannounced), examplesShown)]
}
