// Package pgfeed connects the adapters of several instances of one MCP
// server through the PostgreSQL database they share, so that a write
// through any instance, or by any client of the database, re-runs the live
// queries of every instance.
//
// A Feed hears about changes from one of two sources (WithSource):
//
//   - WAL reads PostgreSQL's write-ahead log through logical replication:
//     a publication on the tables the live commands read, and a
//     replication slot per instance. A write pays nothing for it, every
//     committed write to the tables is heard whoever made it, and an
//     instance that reconnects resumes where it stopped. It needs
//     wal_level=logical, a role with the REPLICATION attribute and
//     PostgreSQL 14 or later.
//   - Notify (the default) uses LISTEN/NOTIFY: instances publish their
//     changes, and triggers (InstallTriggers) report the writes made
//     without them. It needs nothing of the server, but every watched write
//     pays for its trigger and notification, and an instance that
//     reconnects re-runs every live query.
//
// docs/many-instances.md compares them with figures, and says what each
// needs of managed services and proxies.
//
// # Wiring
//
// Create a Feed on the database the instances share, prepare the database
// with Install at every start, give the feed to the adapter, and run it for
// as long as the server runs:
//
//	feed := pgfeed.New(url,
//		pgfeed.WithSource(pgfeed.WAL),
//		pgfeed.WithTables(
//			pgfeed.TableSpec{Table: "customers", IDColumn: "id"},
//			pgfeed.TableSpec{Table: "orders", IDColumn: "id"},
//		),
//	)
//	defer feed.Close() // after Run has returned
//	err := feed.Install(ctx, conn) // the publication, or the triggers
//	a := adapter.Wrap(srv, adapter.WithChangeFeed(feed))
//	go feed.Run(ctx) // returns when ctx ends
//
// From then on every a.Changed on this instance is published to the others
// where need be (Feed.Publish), and what the others change reaches this
// instance's subscriptions (through the sink the adapter attaches).
//
// # Keys
//
// A key is a table name ("customers"), optionally with a row id
// ("customers/12"); the adapter decides which queries a key re-runs. A row's
// key reaches the queries that read that row and those that read the whole
// table; a table's key reaches every query that read any of it. So both
// sources report a write to a row by its key alone ("customers/12", both
// the old and the new one when an UPDATE changes the id), and the table's
// key for TRUNCATE, for a table without an IDColumn, and, with the WAL
// source, for the rows of a transaction that wrote more of them than
// WithTransactionKeyLimit. A TableSpec says how a table's rows are named:
// its IDColumn's value as PostgreSQL prints it, after the table's key.
//
// # The WAL source
//
// Run streams the feed's replication slot and delivers one Changed per
// committed transaction, in commit order, once the transaction is visible
// to the queries the re-runs make (a commit reaches the log a moment
// before). A rolled-back transaction is never seen. Run tells the server
// how far it has delivered, so that the server can recycle the log up to
// there, and after a lost connection resumes from there: nothing is
// missed, nothing is re-run but what changed. Only when the slot is gone
// by then does it call ChangedAll (see Run).
//
// An instance's own writes come back to it through the log too: its
// Publish sends nothing for the keys of its tables, and its re-runs of a
// write it reported with Changed run twice, the second finding nothing new.
// Keys of no table (a derived key, a cache) go into the log as messages
// (pg_logical_emit_message, prefixed with the feed's channel), which every
// other feed reads in their place among the transactions. Any program may
// write one, in the payload format below.
//
// The replication slot is the feed's own, named after its instance id
// ("mcplive_<id>"): Close drops it, and every running feed drops the slots
// of other instances that stayed unused past WithSlotExpiry, so that an
// instance that died cannot make the server keep the log for ever (see
// docs/many-instances.md for the server's own bound, max_slot_wal_keep_size).
//
// # The NOTIFY source
//
// A notification's payload is JSON:
//
//	{"i":"<instance id>","k":["customers/12"]}
//
// where "i" is the publishing feed's id (random unless set with
// WithInstanceID) and "sql" for the triggers. Any other program may send
// such a payload with pg_notify. An empty payload (a bare NOTIFY on the
// channel) or one that cannot be read makes every instance re-run all its
// live queries.
//
// JSON carries only UTF-8: a key that is not valid UTF-8 (a row id from a
// percent-decoded URI, say) is sent as its table, and one whose table is
// not valid UTF-8 either as the empty payload, which re-runs everything on
// every instance, the publisher's included.
//
// NOTIFY payloads are limited to 8000 bytes. A key list that does not fit
// is widened to its tables ("customers/12", "customers/13" become
// "customers"), which re-runs more but misses nothing, and if the tables
// alone do not fit they are sent as several notifications in one
// transaction; a table key too long for any notification is sent as the
// empty payload, which re-runs everything on every instance, the
// publisher's included. The triggers fall back to the table key when a
// row's id makes the payload too long (InstallTriggers refuses a table key
// too long for a notification).
//
// Notifications are not stored: a listener that is disconnected when one
// is sent never receives it. So after Run reconnects (with exponential
// backoff and jitter) it makes every live query of its instance re-run
// once, which catches up on whatever it missed.
//
// # Health and connections
//
// Health reports the source, whether the feed is connected, its
// reconnections and fallbacks, its last error and, for WAL, its position
// in the log and its lag; HealthHandler serves it for a readiness probe.
// Hearing tells the adapter whether every change made elsewhere reaches it
// right now (adapter.ChangeFeedHearing): while it does not, the adapter
// answers no read from the results its live queries keep.
//
// Connect the feed to PostgreSQL itself, to the primary. LISTEN does not
// work through transaction pooling, and replication connections do not go
// through poolers at all.
package pgfeed
