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
// told otherwise, and the prefix of the messages a WAL feed writes to the
// log. Every instance of one application must use the same one.
const DefaultChannel = "mcplive_changes"

// DefaultPublication is the publication a WAL feed reads and Install
// creates unless told otherwise (WithPublication).
const DefaultPublication = "mcplive_changes"

// A Source is where a Feed hears about changes. Whichever it reads, a Feed
// is the same adapter.ChangeFeed, with the same Run, Publish, Install,
// Health and Close: an application chooses with WithSource and changes
// nothing else.
type Source string

const (
	// Notify hears changes through LISTEN/NOTIFY: what other instances
	// publish, and what the triggers of InstallTriggers send at every
	// write. It needs nothing of the server, but the triggers cost every
	// write, and a notification sent while a feed is disconnected is lost
	// to it: after a reconnection every live query re-runs.
	Notify Source = "notify"
	// WAL hears changes in PostgreSQL's write-ahead log, through logical
	// replication: a publication on the tables of WithTables and a
	// replication slot of the feed's own, decoded with pgoutput. A write
	// pays nothing for it, and a feed that reconnects resumes where it
	// stopped. It needs wal_level=logical, a role with the REPLICATION
	// attribute, and PostgreSQL 14 or later (docs/many-instances.md).
	WAL Source = "wal"
)

// sqlInstance is the instance id the triggers put in their payloads. No Feed
// may use it, so every Feed processes what the triggers send.
const sqlInstance = "sql"

// maxIdentifier is PostgreSQL's NAMEDATALEN-1: LISTEN would silently
// truncate a longer channel name, and pg_notify would reject it.
const maxIdentifier = 63

// An Option configures a Feed.
type Option func(*config)

type config struct {
	source         Source
	channel        string
	logger         *slog.Logger
	backoffMin     time.Duration
	backoffMax     time.Duration
	instance       string
	publishTimeout time.Duration
	pingInterval   time.Duration

	// What Install prepares and, for WAL, what the feed decodes.
	tables []TableSpec
	// The WAL source's settings.
	publication    string
	slotExpiry     time.Duration
	statusInterval time.Duration
	txnKeyLimit    int
}

func defaultConfig() config {
	return config{
		source:     Notify,
		channel:    DefaultChannel,
		logger:     slog.Default(),
		backoffMin: 100 * time.Millisecond,
		backoffMax: 5 * time.Second,
		// Lower case, so that the replication slot, named after it,
		// needs no change (slot names are [a-z0-9_]).
		instance:       strings.ToLower(rand.Text()),
		publishTimeout: 5 * time.Second,
		pingInterval:   30 * time.Second,
		publication:    DefaultPublication,
		slotExpiry:     5 * time.Minute,
		statusInterval: 10 * time.Second,
		txnKeyLimit:    1000,
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
	for _, t := range c.tables {
		if err := t.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	switch c.source {
	case Notify:
	case WAL:
		if len(c.tables) == 0 {
			errs = append(errs, errors.New("the WAL source needs the tables it reads (WithTables)"))
		}
		if err := validName("publication", c.publication); err != nil {
			errs = append(errs, err)
		}
		if c.slotExpiry < time.Second {
			errs = append(errs, fmt.Errorf("slot expiry %v: need at least a second", c.slotExpiry))
		}
		// The server drops a replication connection that sends no status
		// for wal_sender_timeout (60 s by default).
		if c.statusInterval <= 0 || c.statusInterval > 30*time.Second {
			errs = append(errs, fmt.Errorf("status interval %v: need more than 0 and at most 30s", c.statusInterval))
		}
		if c.txnKeyLimit < 1 {
			errs = append(errs, fmt.Errorf("transaction key limit %d: need at least 1", c.txnKeyLimit))
		}
	default:
		errs = append(errs, fmt.Errorf("source %q: want %q or %q", c.source, Notify, WAL))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pgfeed: invalid option: %w", err)
	}
	return nil
}

// validName checks a name the WAL source passes to the server unquoted in
// places (a publication in START_REPLICATION's options): lower-case
// letters, digits and underscores, as an unquoted identifier keeps them.
func validName(what, name string) error {
	if name == "" || len(name) > maxIdentifier {
		return fmt.Errorf("%s %q: need 1 to %d bytes", what, name, maxIdentifier)
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("%s %q: need lower-case letters, digits and underscores, not starting with a digit", what, name)
		}
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

// WithChannel sets the NOTIFY channel, and for WAL the prefix of the
// messages Publish writes to the log (default DefaultChannel). All the
// instances of an application, and InstallTriggers, must agree on it;
// different applications sharing a database should use different ones.
func WithChannel(name string) Option {
	return func(c *config) { c.channel = name }
}

// WithLogger sets where the feed reports connection losses, reconnections,
// fallbacks, dropped slots and undecodable notifications (default
// slog.Default()).
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
// publishes, so that it can recognise and skip its own, and after which a
// WAL feed names its replication slot (default: random, lower-case letters
// and digits, which is what you want unless you need stable ids in logs).
// Every running instance must have a different id, valid UTF-8, and "sql"
// is reserved for the triggers. A WAL feed started with the id of an
// earlier process drops that process's slot and makes a new one: the old
// position means nothing to queries that start now.
func WithInstanceID(id string) Option {
	return func(c *config) { c.instance = id }
}

// WithPublishTimeout bounds one Publish when its context has no earlier
// deadline (default 5s), so that a hung database cannot block a writer.
func WithPublishTimeout(d time.Duration) Option {
	return func(c *config) { c.publishTimeout = d }
}

// WithSource chooses where the feed hears about changes: Notify (the
// default) or WAL. See Source.
func WithSource(s Source) Option {
	return func(c *config) { c.source = s }
}

// WithTables names the tables the live commands read and how their rows
// are named in keys. Install prepares them for the feed's source (the
// triggers of InstallTriggers, or the publication of the WAL source), and
// the WAL source decodes their changes into keys with them, which it
// cannot do without: a WAL feed needs at least one.
func WithTables(tables ...TableSpec) Option {
	return func(c *config) { c.tables = append(c.tables, tables...) }
}

// WithPublication sets the publication a WAL feed reads and Install
// creates (default DefaultPublication): lower-case letters, digits and
// underscores. Every instance of an application uses the same one.
func WithPublication(name string) Option {
	return func(c *config) { c.publication = name }
}

// WithSlotExpiry sets how long the replication slot of another instance
// may stay unused before a WAL feed drops it (default 5 minutes, at least
// a second). A slot keeps the server from recycling the log it has not
// confirmed: the slot of an instance that died without Close would keep
// it for ever. Every running feed looks at the slots of the database
// named like its own about five times per expiry and drops those it saw
// unused for all of it; a feed whose slot was dropped while it was away
// (cut from the database longer than that) makes its instance re-run
// every live query once it is back.
func WithSlotExpiry(d time.Duration) Option {
	return func(c *config) { c.slotExpiry = d }
}

// WithStatusInterval sets how often a WAL feed tells the server how far it
// has read (default 10s, at most 30s), which lets the server recycle the
// log up to there, and asks for an answer, which tells the feed that the
// connection is alive.
func WithStatusInterval(d time.Duration) Option {
	return func(c *config) { c.statusInterval = d }
}

// WithTransactionKeyLimit sets how many distinct keys a WAL feed reports
// for one transaction (default 1000): past it the transaction's row keys
// collapse into their tables' keys ("customers/12", "customers/13" become
// "customers"), which re-runs more queries but keeps a bulk write from
// costing memory and time by the row.
func WithTransactionKeyLimit(n int) Option {
	return func(c *config) { c.txnKeyLimit = n }
}
