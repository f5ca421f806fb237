package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
	"github.com/mcplive/adapter/e2e/internal/loadkit/mcpgoclient"
)

// rereaders is how many re-reads of one session may be in flight at once:
// an agent that re-reads each notified URI as soon as it hears of it.
const rereaders = 4

// retriesPerURI bounds how often one URI is read again after a read
// failed because the instance that served it died: a client retries what
// the kill cut, but a failure that keeps coming is a fault.
const retriesPerURI = 10

// A subscriber is one client session that watches its URIs the way an
// agent would: told that a URI changed, it re-reads it and keeps what it
// read. When its connection ends (a legacy session's GET stream, a listen
// stream), it reconnects through the balancer: a legacy client whose
// session the server no longer knows initializes a new one and subscribes
// again, a listen client listens again; then it re-reads every URI, since
// it may have missed notifications meanwhile.
type subscriber struct {
	name     string
	era      string
	uris     []string
	c        *client.Client
	rt       *http.Transport // the client's own, closed with it
	watch    *streamWatch
	run      *fleetRun
	life     context.Context // the client's: its streams last until it ends
	listens  sync.WaitGroup  // listen: the Listen calls, which close waits for
	acks     chan []string   // listen: the acknowledged resourceSubscriptions
	lost     chan struct{}   // a stream ended: the recovery loop reconnects
	work     chan string     // URIs to re-read; each at most once (see subscription)
	readers  sync.WaitGroup
	recovery sync.WaitGroup

	mu            sync.Mutex
	watched       map[string]*subscription
	notifications int
	rereads       int
	latencies     []time.Duration // in arrival order
	beforeKill    int             // how many of latencies arrived before the kill
	// stream names the connection the subscriptions live on: the legacy
	// session's ID, or the listen call ("listen-3"); streamGone says that
	// it ended. down says that the subscriber has lost its connection and
	// not yet subscribed again on a new one; re-reads wait meanwhile.
	stream     string
	streamGone bool
	listenN    int
	down       bool
	stopLast   context.CancelFunc // listen: ends the current Listen call
	// losses counts lost connections; subscribed is when it was last
	// subscribed again, back when every URI had been re-read since, and
	// newSession whether the server had forgotten the session.
	losses      int
	subscribed  time.Time
	back        time.Time
	newSession  bool
	epoch       int           // counts subscribing: every read that starts after it is fresh
	allFresh    chan struct{} // closed once every URI was read fresh in this epoch
	closing     bool
	readRetries int   // reads retried after the kill cut them
	firstRetry  error // the error of the first of them
	// killLogs counts what its transport logged at Error level after the
	// kill, firstKillLog is the first.
	killLogs     int
	firstKillLog string
	// named counts the versions its listens named (listen clients), and
	// relistened when it last listened again naming them.
	named      int
	naming     bool // a listen naming versions waits for its acknowledgement
	relistened time.Time
	// announced counts the notifications that came within announceWindow
	// of its listening again: those the server sends at once for the URIs
	// whose version differs from the one named.
	announced int
}

// announceWindow is how soon after a listen is acknowledged its
// notifications count as announced at once: the server sends those right
// behind the acknowledgement; the writes' own come every few seconds a URI.
const announceWindow = 250 * time.Millisecond

// A subscription is what a subscriber knows of one of its URIs.
//
// A URI is re-read by one reader at a time, so that reads of it cannot
// finish out of order: a notification marks it queued, and it goes into
// work then if no read of it is under way, or else when that read ends. So
// the last read of a URI always starts after its last notification.
type subscription struct {
	last     string // what the last read returned
	version  string // its version (mcpgoclient.MetaVersion)
	queued   bool   // notified (or subscribed again), and no read started since
	inWork   bool   // in the subscriber's work channel
	reading  bool   // a read is under way
	customer int64  // of a customers_show URI; 0 for the others
	fresh    int    // the last epoch a read started in and succeeded
	retries  int    // failed reads retried (retriesPerURI)
	// covered is how many writes of customer had started when the latest
	// notification arrived; announced is how many of them a notification
	// announced before the next write of the customer started.
	covered, announced int
}

// newSubscriber connects session name on era through url. It does not
// subscribe yet.
func newSubscriber(life context.Context, url string, rt http.RoundTripper, era, name string, uris []string, run *fleetRun) (*subscriber, error) {
	s := &subscriber{
		name: name, era: era, uris: uris, run: run, life: life,
		acks: make(chan []string, 1), lost: make(chan struct{}, 1), work: make(chan string, len(uris)),
		watched: make(map[string]*subscription, len(uris)),
	}
	for _, uri := range uris {
		id, _ := loadkit.ShowID(uri)
		s.watched[uri] = &subscription{customer: id}
	}
	o := dialOptions{name: name, era: era, onNotification: s.onNotification, excused: s.excused}
	if era == legacyEra {
		o.getStream, o.onStreamEnd = true, s.streamEnded
	} else {
		o.versions = s.versions
	}
	c, watch, err := dial(life, url, rt, run.problems, o)
	if err != nil {
		return nil, err
	}
	s.c, s.watch = c, watch
	return s, nil
}

// subscribe subscribes to every URI (on 2025-11-25 once the GET stream is
// open, on 2026-07-28 with one listen stream, until it is acknowledged),
// reads each once, and starts re-reading on notifications, and
// reconnecting when a stream ends, until reread ends. close waits for
// both, so reread must end first.
func (s *subscriber) subscribe(ctx, reread context.Context) error {
	if _, err := s.connect(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	for _, uri := range s.uris {
		text, version, err := mcpgoclient.Read(ctx, s.c, uri)
		if err != nil {
			return fmt.Errorf("%s: first %w", s.name, err)
		}
		s.mu.Lock()
		s.watched[uri].last, s.watched[uri].version = text, version
		s.mu.Unlock()
	}
	for range rereaders {
		s.readers.Go(func() { s.reread(reread) })
	}
	s.recovery.Go(func() { s.recover(reread) })
	return nil
}

// connect opens the connection the subscriptions live on and subscribes:
// on 2025-11-25, once the session's GET stream is open, resources/subscribe
// for each URI (not again when the session outlived a broken stream); on
// 2026-07-28 a listen stream, until it is acknowledged. It returns whether
// it started a new session.
func (s *subscriber) connect(ctx context.Context) (newSession bool, err error) {
	if s.era == listenEra {
		return false, s.listen(ctx)
	}
	session := s.c.GetSessionId()
	s.mu.Lock()
	newSession = session != s.stream
	s.stream, s.streamGone = session, false
	s.mu.Unlock()
	select {
	case <-s.watch.streamOpened(session):
	case <-time.After(callTimeout):
		return newSession, fmt.Errorf("the GET stream of session %s was not answered within %v", session, callTimeout)
	case <-ctx.Done():
		return newSession, ctx.Err()
	}
	// A stream that ended before s.stream named its session was not
	// counted as the subscriber's: the watch remembers it. (Under s.mu,
	// for the watch notes an end before it tells streamEnded.)
	s.mu.Lock()
	if s.watch.ended(session) {
		s.streamGone = true
	}
	s.mu.Unlock()
	if !newSession {
		return false, nil
	}
	// As many subscribe requests in flight as re-reads: a client that
	// comes back after its instance died wants its subscriptions back
	// soon, and its requests all go to one instance.
	errs := make([]error, len(s.uris))
	sem := make(chan struct{}, rereaders)
	var wg sync.WaitGroup
	for i, uri := range s.uris {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			if err := s.c.Subscribe(cctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
				errs[i] = fmt.Errorf("subscribe to %s: %w", uri, err)
			}
		})
	}
	wg.Wait()
	return true, errors.Join(errs...)
}

// listen opens one subscriptions/listen stream for every URI, which lasts
// until the subscriber's life ends or it closes, and waits for its
// acknowledgement to name them all.
func (s *subscriber) listen(ctx context.Context) error {
	select {
	case <-s.acks: // a late one of a call that failed
	default:
	}
	lctx, stop := context.WithCancel(s.life)
	ended := make(chan struct{})
	s.mu.Lock()
	s.listenN++
	name := "listen-" + strconv.Itoa(s.listenN)
	s.stream, s.streamGone, s.stopLast = name, false, stop
	s.mu.Unlock()
	s.listens.Go(func() {
		defer close(ended)
		err := s.c.Listen(lctx, mcp.SubscriptionFilter{ResourceSubscriptions: s.uris})
		if lctx.Err() == nil {
			if err == nil {
				err = errors.New("the server ended it")
			}
			s.streamEnded(name, err)
		}
	})
	fail := func(err error) error {
		stop()
		<-ended
		return err
	}
	select {
	case got := <-s.acks:
		if !sameSet(got, s.uris) {
			return fail(fmt.Errorf("the listen stream acknowledged %q, want %q", got, s.uris))
		}
		return nil
	case <-ended:
		return errors.New("the listen stream ended before its acknowledgement")
	case <-time.After(callTimeout):
		return fail(fmt.Errorf("no notifications/subscriptions/acknowledged within %v", callTimeout))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// streamEnded is told that the stream named stream ended by no doing of
// the client's. If it is the one the subscriptions live on, the subscriber
// is down until the recovery loop has connected and subscribed again.
func (s *subscriber) streamEnded(stream string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stream != s.stream || s.closing {
		return
	}
	s.streamGone = true
	s.loseLocked(fmt.Errorf("its stream %s ended: %w", stream, err))
}

// loseLocked makes the subscriber down, unless it is already, and wakes
// the recovery loop.
func (s *subscriber) loseLocked(err error) {
	if s.down || s.closing {
		return
	}
	s.down = true
	s.losses++
	if !s.run.killed() {
		s.run.problems.Add("%s: lost its connection before any instance was killed: %v", s.name, err)
	}
	select {
	case s.lost <- struct{}{}:
	default:
	}
}

// recover reconnects whenever the subscriber is down, until ctx ends.
func (s *subscriber) recover(ctx context.Context) {
	for {
		select {
		case <-s.lost:
		case <-ctx.Done():
			return
		}
		if err := s.reconnect(ctx); err != nil {
			if ctx.Err() == nil {
				s.run.problems.Add("%s: %v", s.name, err)
			}
			return
		}
	}
}

// reconnectBudget bounds how long a client that lost its connection may
// take to be connected and subscribed again, and pause the first wait
// between its attempts, which doubles up to a second.
const (
	reconnectBudget = 30 * time.Second
	firstPause      = 50 * time.Millisecond
)

// reconnect connects through the balancer again and subscribes, then
// re-reads every URI. On 2025-11-25 it pings first: a session the server
// no longer knows answers 404, and the client initializes a new one, as
// MCP asks; the balancer sends it to a live instance. Attempts that fail
// (a request in flight when the instance died, an instance the balancer
// has not yet marked down) are retried after a pause.
func (s *subscriber) reconnect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, reconnectBudget)
	defer cancel()
	pause := firstPause
	for {
		newSession, err := s.reconnectOnce(ctx)
		if err == nil {
			s.mu.Lock()
			if !s.streamGone {
				s.subscribed = time.Now()
				s.down = false
				s.newSession = s.newSession || newSession
				s.epoch++
				s.allFresh = make(chan struct{})
				for _, uri := range s.uris {
					if sub := s.watched[uri]; s.era == listenEra && sub.version != "" && !sub.queued {
						// Named in the listen: the server notifies it at
						// once if its result has another version now. One
						// notified meanwhile (while the subscriber was
						// down, so not put to work) is read.
						sub.fresh = s.epoch
						continue
					}
					s.queueLocked(uri)
				}
				fresh := s.allFresh
				s.checkFreshLocked()
				s.mu.Unlock()
				return s.awaitFresh(ctx, fresh)
			}
			s.mu.Unlock()
			err = errors.New("its new stream ended at once")
		}
		if ctx.Err() != nil {
			return fmt.Errorf("not connected and subscribed again within %v of losing its stream: %v", reconnectBudget, err)
		}
		s.run.problems.Excused.Add(1)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
		pause = min(2*pause, time.Second)
	}
}

// reconnectOnce is one attempt of reconnect.
func (s *subscriber) reconnectOnce(ctx context.Context) (newSession bool, err error) {
	if s.era == legacyEra {
		pctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := s.c.Ping(pctx)
		cancel()
		switch {
		case err == nil: // the session lives; only its stream broke
		case sessionGone(err):
			if err := initialize(ctx, s.c, s.era); err != nil {
				return false, err
			}
		default:
			return false, fmt.Errorf("ping: %w", err)
		}
	}
	return s.connect(ctx)
}

// awaitFresh waits until every URI has been read since the subscriber
// subscribed again, and notes when.
func (s *subscriber) awaitFresh(ctx context.Context, fresh <-chan struct{}) error {
	select {
	case <-fresh:
	case <-ctx.Done():
		return fmt.Errorf("subscribed again, but did not re-read every URI within %v of losing its stream", reconnectBudget)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.back = time.Now()
	return nil
}

// excused says whether an error this client's transport logged may be
// the kill's doing: once it happened, any. It counts them; measure
// judges whether the kill explains them (unexplained).
func (s *subscriber) excused(line string) bool {
	if !s.run.killed() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killLogs == 0 {
		s.firstKillLog = line
	}
	s.killLogs++
	return true
}

// onNotification runs on the transport's reading goroutine: it records
// and queues, never waits.
func (s *subscriber) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationResourceUpdated):
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		s.updated(uri, time.Now())
	case string(mcp.MethodNotificationSubscriptionsAcknowledged):
		s.mu.Lock()
		if s.naming {
			// Read on the transport's goroutine, ahead of the
			// notifications that follow the acknowledgement.
			s.naming, s.relistened = false, time.Now()
		}
		s.mu.Unlock()
		var params mcp.SubscriptionsAcknowledgedParams
		raw, _ := json.Marshal(n.Params)
		if err := json.Unmarshal(raw, &params); err != nil {
			s.run.problems.Add("%s: an acknowledgement it cannot parse: %s", s.name, raw)
			return
		}
		select {
		case s.acks <- params.Notifications.ResourceSubscriptions:
		default:
			s.run.problems.Add("%s: a second acknowledgement: %s", s.name, raw)
		}
	}
}

// updated handles a notification that uri changed, arriving at at.
func (s *subscriber) updated(uri string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.watched[uri]
	if !ok {
		s.run.problems.Add("%s: notified for %q, which it did not subscribe to", s.name, uri)
		return
	}
	s.notifications++
	if isOrdersWindow(uri) {
		s.run.problems.Add("%s: notified for %s, which no write changes", s.name, uri)
	}
	if !s.relistened.IsZero() && at.Sub(s.relistened) < announceWindow {
		s.announced++
	}
	if sub.customer != 0 {
		// The notification announces the latest write of the customer
		// that started before it arrived. Any earlier one not covered yet
		// was followed by another write before anything announced it.
		upTo, oldest := s.run.writes.Pending(sub.customer, sub.covered, at)
		if !oldest.IsZero() {
			s.latencies = append(s.latencies, at.Sub(oldest))
			if !s.run.killed() {
				s.beforeKill++
			}
			sub.covered = upTo
			sub.announced++
		}
	}
	s.queueLocked(uri)
}

// queueLocked marks uri to be read again, and puts it into work unless it
// is there already, being read (its reader puts it back), or the
// subscriber is down (reconnecting puts every URI there). So work never
// holds a URI twice, and a send never blocks.
func (s *subscriber) queueLocked(uri string) {
	sub := s.watched[uri]
	sub.queued = true
	if !sub.inWork && !sub.reading && !s.down {
		sub.inWork = true
		s.work <- uri
	}
}

// reread re-reads URIs from work until ctx ends.
func (s *subscriber) reread(ctx context.Context) {
	for {
		var uri string
		select {
		case uri = <-s.work:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		sub := s.watched[uri]
		sub.queued, sub.inWork, sub.reading = false, false, true
		epoch := s.epoch
		s.mu.Unlock()

		text, version, err := mcpgoclient.Read(ctx, s.c, uri)
		if err != nil && ctx.Err() != nil {
			return // the run is over
		}

		s.mu.Lock()
		sub.reading = false
		switch {
		case err == nil:
			sub.last, sub.version = text, version
			s.rereads++
			if epoch == s.epoch && !s.down {
				sub.fresh = epoch
				s.checkFreshLocked()
			}
			s.run.progressed()
		case sessionGone(err):
			// The session died with its instance, and this read is how the
			// client learns it (its GET stream's end may come later):
			// reconnecting re-reads every URI.
			s.loseLocked(err)
			s.run.problems.Excused.Add(1)
			sub.queued = true
		case s.down:
			s.run.problems.Excused.Add(1)
			sub.queued = true
		case s.run.killed() && sub.retries < retriesPerURI:
			// Cut by the kill, presumably: in flight on the instance that
			// died (a listen client's reads go anywhere, a legacy
			// session's where it lives). Read it again; measure judges
			// whether the kill explains it.
			s.run.problems.Excused.Add(1)
			if s.readRetries == 0 {
				s.firstRetry = err
			}
			s.readRetries++
			sub.retries++
			sub.queued = true
		default:
			s.run.problems.Add("%s: re-%v", s.name, err)
		}
		if sub.queued {
			s.queueLocked(uri) // notified during the read, or failed: read again
		}
		s.mu.Unlock()
	}
}

// versions are the versions the subscriber last read, for a listen to
// name (versionNamer): none the first time it listens.
func (s *subscriber) versions() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	named := make(map[string]string)
	for uri, sub := range s.watched {
		if sub.version != "" {
			named[uri] = sub.version
		}
	}
	if len(named) > 0 {
		s.named += len(named)
		s.naming = true
	}
	return named
}

// isOrdersWindow reports whether uri is one of the orders windows, which
// no write of the run changes (plan).
func isOrdersWindow(uri string) bool { return strings.HasPrefix(uri, "app://orders_between/") }

// checkFreshLocked closes allFresh once every URI has been read in the
// current epoch.
func (s *subscriber) checkFreshLocked() {
	if s.allFresh == nil {
		return
	}
	for _, sub := range s.watched {
		if sub.fresh != s.epoch {
			return
		}
	}
	close(s.allFresh)
	s.allFresh = nil
}

// stale compares the last read of every URI with truth. It returns how
// many differ and, of those, how many were still queued or being re-read:
// told, but behind; the others were never told of their last change.
func (s *subscriber) stale(truth map[string]string) (stale, behind int, examples []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, uri := range s.uris {
		sub := s.watched[uri]
		if sub.last == truth[uri] {
			continue
		}
		stale++
		told := sub.queued || sub.reading
		if told {
			behind++
		}
		examples = append(examples, fmt.Sprintf("%s %s (told of the change: %v, lost its connection %d times): last read %.120s, now %.120s",
			s.name, uri, told, s.losses, sub.last, truth[uri]))
	}
	return stale, behind, examples
}

// unannounced counts the writes of its customers that no notification
// announced before the customer's next write, or for the last write
// before now, given how many writes each customer had; with examples.
func (s *subscriber) unannounced(writes map[int64]int) (n int, examples []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, uri := range s.uris {
		sub := s.watched[uri]
		if missed := writes[sub.customer] - sub.announced; sub.customer != 0 && missed > 0 {
			n += missed
			examples = append(examples, fmt.Sprintf("%s %s: %d of %d writes announced", s.name, uri, sub.announced, writes[sub.customer]))
		}
	}
	return n, examples
}

// outage is what a subscriber's lost connection cost it: whether it lost
// one; from the kill to when it was subscribed again, and to when it was
// back (subscribed, and every URI re-read since); and whether it needed a
// new session.
type outage struct {
	lost, back       bool
	subscribed, took time.Duration
	newSession       bool
}

func (s *subscriber) outage(killedAt time.Time) outage {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := outage{lost: s.losses > 0, back: s.losses > 0 && !s.down && !s.back.IsZero(), newSession: s.newSession}
	if o.back {
		o.subscribed, o.took = s.subscribed.Sub(killedAt), s.back.Sub(killedAt)
	}
	return o
}

// relisten returns how many versions its listens named and how many
// notifications came at once after them.
func (s *subscriber) relisten() (named, announced int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.named, s.announced
}

// counts returns what the subscriber measured.
func (s *subscriber) counts() (notifications, rereads, retries int, before, after []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notifications, s.rereads, s.readRetries, slices.Clone(s.latencies[:s.beforeKill]), slices.Clone(s.latencies[s.beforeKill:])
}

// unexplained says what went wrong after the kill for a legacy session
// that kept its connection: reads that failed, errors its transport
// logged. Its instance lived, so the kill does not explain them. A listen
// client's requests go anywhere, the killed instance too, until the
// balancer stops sending it any.
func (s *subscriber) unexplained() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.era != legacyEra || s.losses > 0 || s.readRetries+s.killLogs == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d reads failed (the first: %v), its transport logged %d errors (the first: %s)",
		s.name, s.readRetries, s.firstRetry, s.killLogs, s.firstKillLog)
}

// session is the legacy session's ID, which the instance holding it knows.
func (s *subscriber) session() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream
}

// close waits for the re-readers and the recovery loop (whose context the
// caller has ended), and closes the listen stream and the session.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.watch.close()
	s.readers.Wait()
	s.recovery.Wait()
	s.mu.Lock()
	stop := s.stopLast
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.listens.Wait()
	s.c.Close()
	if s.rt != nil {
		s.rt.CloseIdleConnections()
	}
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}
