// Package pgfeed connects the adapters of several instances of one MCP
// server through PostgreSQL LISTEN/NOTIFY, so that a write through any
// instance, or by any client of the database, re-runs the live queries of
// every instance.
//
// # Wiring
//
// Create a Feed on the database the instances share, give it to the
// adapter, and run it for as long as the server runs:
//
//	feed := pgfeed.New(url)
//	defer feed.Close()
//	a := adapter.Wrap(srv, adapter.WithChangeFeed(feed))
//	go feed.Run(ctx) // returns when ctx ends
//
// From then on every a.Changed on this instance is published to the others
// (Feed.Publish), and what the others publish reaches this instance's
// subscriptions (through the sink the adapter attaches). An instance does not
// hear its own changes back: the adapter has handled them already.
//
// To make writes that bypass the adapter visible too (psql, migrations,
// other services), install triggers on the tables the live queries read,
// once at every start; installing is idempotent:
//
//	err := pgfeed.InstallTriggers(ctx, pool, "",
//		pgfeed.TableSpec{Table: "customers", IDColumn: "id"},
//		pgfeed.TableSpec{Table: "orders", IDColumn: "id"},
//	)
//
// # Keys and payloads
//
// A key is a table name ("customers"), optionally with a row id
// ("customers/12"); the adapter decides which queries a key re-runs. A
// notification's payload is JSON:
//
//	{"i":"<instance id>","k":["customers","customers/12"]}
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
// # Failures
//
// Notifications are not stored: a listener that is disconnected when one
// is sent never receives it. So after Run reconnects (with exponential
// backoff and jitter) it makes every live query of its instance re-run
// once, which catches up on whatever it missed. Health reports whether the
// feed is listening, its reconnections and its last error; HealthHandler
// serves it for a readiness probe.
//
// PostgreSQL delivers notifications only after the sending transaction
// commits, and to the listeners of the same database. Connect the feed to
// PostgreSQL directly or through a session-pooling proxy: LISTEN does not
// work through transaction pooling.
package pgfeed
