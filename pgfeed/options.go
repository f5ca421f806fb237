package pgfeed

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultChannel is the NOTIFY channel a Feed and InstallTriggers use unless
// told otherwise. Every instance of one application must use the same one.
const DefaultChannel = "mcplive_changes"

// sqlInstance is the instance id the triggers put in their payloads. No Feed
// may use it, so every Feed processes what the triggers send.
const sqlInstance = "sql"

// maxIdentifier is PostgreSQL's NAMEDATALEN-1: LISTEN would silently
// truncate a longer channel name, and pg_notify would reject it.
const maxIdentifier = 63

// An Option configures a Feed.
type Option func(*config)

type config struct {
	channel        string
	logger         *slog.Logger
	backoffMin     time.Duration
	backoffMax     time.Duration
	instance       string
	publishTimeout time.Duration
	pingInterval   time.Duration
}

func defaultConfig() config {
	return config{
		channel:        DefaultChannel,
		logger:         slog.Default(),
		backoffMin:     100 * time.Millisecond,
		backoffMax:     5 * time.Second,
		instance:       rand.Text(),
		publishTimeout: 5 * time.Second,
		pingInterval:   30 * time.Second,
	}
}

func (c config) validate() error {
	var errs []error
	if err := validChannel(c.channel); err != nil {
		errs = append(errs, err)
	}
	if c.instance == "" || c.instance == sqlInstance {
		errs = append(errs, fmt.Errorf("instance id %q is reserved", c.instance))
	} else if !utf8.ValidString(c.instance) {
		// JSON would carry it altered, and the feed would not know its
		// own notifications.
		errs = append(errs, fmt.Errorf("instance id %q is not valid UTF-8", c.instance))
	}
	if c.backoffMin <= 0 || c.backoffMax < c.backoffMin {
		errs = append(errs, fmt.Errorf("backoff %v..%v: need 0 < min <= max", c.backoffMin, c.backoffMax))
	}
	if c.publishTimeout <= 0 {
		errs = append(errs, fmt.Errorf("publish timeout %v: must be positive", c.publishTimeout))
	}
	if c.logger == nil {
		errs = append(errs, errors.New("logger is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pgfeed: invalid option: %w", err)
	}
	return nil
}

func validChannel(channel string) error {
	if channel == "" || len(channel) > maxIdentifier {
		return fmt.Errorf("channel %q: need 1 to %d bytes", channel, maxIdentifier)
	}
	// LISTEN would drop a NUL (pgx.Identifier does) and listen on another
	// channel than pg_notify's, which refuses it, as the server refuses
	// what is not UTF-8.
	if strings.ContainsRune(channel, 0) || !utf8.ValidString(channel) {
		return fmt.Errorf("channel %q: need valid UTF-8 without NUL", channel)
	}
	return nil
}

// WithChannel sets the NOTIFY channel (default DefaultChannel). All the
// instances of an application, and InstallTriggers, must agree on it;
// different applications sharing a database should use different ones.
func WithChannel(name string) Option {
	return func(c *config) { c.channel = name }
}

// WithLogger sets where the feed reports connection losses, reconnections
// and undecodable notifications (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithBackoff sets the delays between reconnection attempts: the first
// waits about minDelay, each next one twice as long, up to maxDelay (default
// 100ms to 5s). Each delay is randomised between half and all of its value so that
// instances that lost the database together do not return in lockstep. The
// delays start again from minDelay only after a connection that lasted
// maxDelay: one lost sooner counts as a failed attempt.
func WithBackoff(minDelay, maxDelay time.Duration) Option {
	return func(c *config) { c.backoffMin, c.backoffMax = minDelay, maxDelay }
}

// WithInstanceID sets the id this feed puts in the notifications it
// publishes, so that it can recognise and skip its own (default: random,
// which is what you want unless you need stable ids in logs). Every running
// instance must have a different id, valid UTF-8, and "sql" is reserved for
// the triggers.
func WithInstanceID(id string) Option {
	return func(c *config) { c.instance = id }
}

// WithPublishTimeout bounds one Publish when its context has no earlier
// deadline (default 5s), so that a hung database cannot block a writer.
func WithPublishTimeout(d time.Duration) Option {
	return func(c *config) { c.publishTimeout = d }
}
