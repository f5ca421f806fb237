package adapter

import "context"

// A ChangeFeed connects the adapters of several server instances that share
// one database, so that a write through any of them (or by any other client
// of the database) re-runs the live queries of all of them.
//
// Wrap with WithChangeFeed calls Attach once. From then on the feed delivers
// the keys that changed elsewhere to the sink, from goroutines of its own, and
// the adapter hands every local Changed call to Publish. A feed must not
// deliver a local change back to its own sink: the adapter has already
// processed it.
//
// Without a feed the adapter works in-process only: Changed re-runs the live
// queries of this instance.
type ChangeFeed interface {
	// Attach gives the feed the sink for changes from elsewhere.
	Attach(sink ChangeSink)
	// Publish carries keys changed by local writes to the other instances.
	// The adapter calls it from a goroutine of its own, one call at a time,
	// with a context that ends after 30 s, a backstop: a feed should bound
	// its own attempt (pgfeed does, 5 s by default). Keys changed meanwhile
	// wait and go, sorted and without duplicates, in the next call. A
	// Publish that panics fails, logged.
	Publish(ctx context.Context, keys []string) error
}

// A ChangeFeedAll is a ChangeFeed that can also tell the other instances
// that anything may have changed. The adapter uses it when local changes
// pile up while a Publish is slow, more distinct keys than it keeps
// (10,000) even once row keys are widened to their tables: the keys waiting
// are then given up for one PublishAll, so that memory stays bounded
// however many distinct keys are written. A feed that is only a ChangeFeed
// gets every key, however many. pgfeed.Feed is a ChangeFeedAll.
type ChangeFeedAll interface {
	ChangeFeed
	// PublishAll is Publish of every key there is: each other instance
	// re-runs all its live queries, as after ChangeSink.ChangedAll. The
	// adapter calls it as it calls Publish: from its goroutine, one call
	// at a time, with the same backstop.
	PublishAll(ctx context.Context) error
}

// A ChangeSink receives the changes a ChangeFeed hears from elsewhere.
type ChangeSink interface {
	// Changed reports that the data behind keys changed.
	Changed(keys ...string)
	// ChangedAll reports that anything may have changed, for example after
	// the feed lost its connection and could have missed notifications: every
	// live query re-runs once.
	ChangedAll()
}
