package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
	"github.com/mcplive/adapter/e2e/internal/loadkit/mcpgoclient"
)

// A subscriber is one client session that watches its URIs the way an
// agent would: told that a URI changed, it re-reads it on its own session
// and keeps what it read. The notification handler only queues the URI, so
// that the session's stream keeps being read while re-reads are in flight;
// rereaders goroutines re-read, so that several POSTs of one session are
// often in flight at once. (Each is a chance for mcp-go v1.2.1's
// transport, left to itself, to take a notification off the session's
// channel and drop it.)
type subscriber struct {
	name     string
	era      string
	uris     []string
	c        *client.Client
	writes   *loadkit.WriteLog
	problems *loadkit.Problems

	opened     <-chan struct{} // legacy: the GET stream was answered
	acks       chan []string   // listen: the acknowledged resourceSubscriptions
	stopListen func()          // listen: closes the listen stream
	// work holds the URIs to re-read. A URI is in it at most once (see
	// subscription), so it never fills.
	work    chan string
	readers sync.WaitGroup

	mu            sync.Mutex
	watched       map[string]*subscription
	notifications int
	rereads       int
	latencies     []time.Duration
}

// A subscription is what a subscriber knows of one of its URIs.
//
// A URI is re-read by one reader at a time, so that reads of it cannot
// finish out of order: a notification marks it queued, and it goes into
// work then if no read of it is under way, or else when that read ends. So
// the last read of a URI always starts after its last notification.
type subscription struct {
	last     string // what the last read returned
	queued   bool   // notified, and no read started since
	reading  bool   // a read is under way
	customer int64  // of a customers_show URI; 0 for an index query
	// covered is how many writes of customer had started when the latest
	// notification arrived; announced is how many of them a notification
	// announced before the next write of the customer started. A write
	// that was not is unannounced: its notification was lost, or came
	// later than the customer's next change.
	covered, announced int
}

// newSubscriber connects session name on era. It does not subscribe yet.
func newSubscriber(life context.Context, url string, rt http.RoundTripper, era, name string, uris []string, writes *loadkit.WriteLog, p *loadkit.Problems) (*subscriber, error) {
	s := &subscriber{
		name: name, era: era, uris: uris, writes: writes, problems: p,
		acks: make(chan []string, 1), work: make(chan string, len(uris)),
		watched: make(map[string]*subscription, len(uris)),
	}
	for _, uri := range uris {
		id, _ := loadkit.ShowID(uri)
		s.watched[uri] = &subscription{customer: id}
	}
	c, opened, err := dial(life, url, rt, p, dialOptions{name: name, era: era, getStream: era == legacyEra, onNotification: s.onNotification})
	if err != nil {
		return nil, err
	}
	s.c, s.opened = c, opened
	return s, nil
}

// subscribe subscribes to every URI (on 2025-11-25 once the GET stream is
// open, on 2026-07-28 with one listen stream, until it is acknowledged),
// reads each once, and starts re-reading on notifications until reread
// ends. close waits for the re-readers, so reread must end first.
func (s *subscriber) subscribe(ctx, reread context.Context) error {
	var err error
	if s.era == legacyEra {
		err = s.subscribeLegacy(ctx)
	} else {
		err = s.listen(reread)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	for _, uri := range s.uris {
		text, err := mcpgoclient.ReadText(ctx, s.c, uri)
		if err != nil {
			return fmt.Errorf("%s: first %w", s.name, err)
		}
		s.mu.Lock()
		s.watched[uri].last = text
		s.mu.Unlock()
	}
	for range *rereadersFlag {
		s.readers.Go(func() { s.reread(reread) })
	}
	return nil
}

// subscribeLegacy waits for the GET stream, so that the session is
// listening as a real client is, then subscribes to each URI.
func (s *subscriber) subscribeLegacy(ctx context.Context) error {
	select {
	case <-s.opened:
	case <-time.After(callTimeout):
		return fmt.Errorf("the GET stream was not answered within %v", callTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, uri := range s.uris {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := s.c.Subscribe(cctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
		cancel()
		if err != nil {
			return fmt.Errorf("subscribe to %s: %w", uri, err)
		}
	}
	return nil
}

// listen opens one subscriptions/listen stream for every URI, which lasts
// until life ends or the subscriber closes, and waits for its
// acknowledgement to name them all.
func (s *subscriber) listen(life context.Context) error {
	stop, err := s.c.ListenAsync(life, mcp.SubscriptionFilter{ResourceSubscriptions: s.uris}, func(err error) {
		s.problems.Add("%s: the listen stream ended: %v", s.name, err)
	})
	if err != nil {
		return err
	}
	s.stopListen = stop
	select {
	case got := <-s.acks:
		if !sameSet(got, s.uris) {
			return fmt.Errorf("the listen stream acknowledged %q, want %q", got, s.uris)
		}
		return nil
	case <-time.After(callTimeout):
		return fmt.Errorf("no notifications/subscriptions/acknowledged within %v", callTimeout)
	case <-life.Done():
		return life.Err()
	}
}

// onNotification runs on the transport's reading goroutine: it records
// and queues, never waits.
func (s *subscriber) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationResourceUpdated):
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		s.updated(uri, time.Now())
	case string(mcp.MethodNotificationSubscriptionsAcknowledged):
		var params mcp.SubscriptionsAcknowledgedParams
		raw, _ := json.Marshal(n.Params)
		if err := json.Unmarshal(raw, &params); err != nil {
			s.problems.Add("%s: an acknowledgement it cannot parse: %s", s.name, raw)
			return
		}
		select {
		case s.acks <- params.Notifications.ResourceSubscriptions:
		default:
			s.problems.Add("%s: a second acknowledgement: %s", s.name, raw)
		}
	}
}

// updated handles a notification that uri changed, arriving at at.
func (s *subscriber) updated(uri string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.watched[uri]
	if !ok {
		s.problems.Add("%s: notified for %q, which it did not subscribe to", s.name, uri)
		return
	}
	s.notifications++
	if sub.customer != 0 {
		// The notification announces the latest write of the customer
		// that started before it arrived. Any earlier one not covered yet
		// was followed by another write before anything announced it.
		upTo, oldest := s.writes.Pending(sub.customer, sub.covered, at)
		if !oldest.IsZero() {
			s.latencies = append(s.latencies, at.Sub(oldest))
			sub.covered = upTo
			sub.announced++
		}
	}
	if !sub.queued && !sub.reading {
		s.work <- uri // never blocks: see subscription
	}
	sub.queued = true
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
		sub.queued, sub.reading = false, true
		s.mu.Unlock()

		text, err := mcpgoclient.ReadText(ctx, s.c, uri)
		if err != nil && ctx.Err() != nil {
			return // the run is over
		}
		if err != nil {
			s.problems.Add("%s: re-%v", s.name, err)
		}

		s.mu.Lock()
		if err == nil {
			sub.last = text
			s.rereads++
		}
		sub.reading = false
		if sub.queued {
			s.work <- uri // notified during the read: read again
		}
		s.mu.Unlock()
	}
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
		examples = append(examples, fmt.Sprintf("%s %s (told of the change: %v): last read %.120s, now %.120s", s.name, uri, told, sub.last, truth[uri]))
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

// counts returns what the subscriber measured.
func (s *subscriber) counts() (notifications, rereads int, latencies []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notifications, s.rereads, slices.Clone(s.latencies)
}

// close waits for the re-readers (whose context the caller has ended),
// and closes the listen stream and the session.
func (s *subscriber) close() {
	s.readers.Wait()
	if s.stopListen != nil {
		s.stopListen()
	}
	s.c.Close()
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}
