package main

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcplive/adapter/pgfeed"
)

// On PostgreSQL, /metrics also reports the change feed, read from its
// Health at every scrape, each with the label source ("notify" or "wal"):
//
//	mcplive_feed_connected           1 while the feed listens or streams
//	mcplive_feed_confirmed_lsn       WAL: how far it has delivered, in bytes of log
//	mcplive_feed_lag_bytes           WAL: the log the server wrote past that
//	mcplive_feed_lag_seconds         WAL: commit to delivery of the last transaction
//	mcplive_feed_reconnects_total    connections made after a lost one
//	mcplive_feed_fallbacks_total     times every live query re-ran for what
//	                                 the feed could not know it missed
//
// Alert on mcplive_feed_connected at 0 for longer than the reconnection
// backoff, on lag that grows, and on fallbacks that do.

// feedScope names the instruments of the feed's metrics.
const feedScope = "github.com/mcplive/adapter/examples/customers/feed"

// registerFeed adds the feed's metrics to t's meters; close unregisters
// them.
func (t *telemetry) registerFeed(feed *pgfeed.Feed) error {
	m := t.meters.Meter(feedScope)
	connected, err1 := m.Int64ObservableGauge("mcplive.feed.connected",
		metric.WithDescription("1 while the change feed listens (NOTIFY) or streams (WAL), 0 otherwise"))
	confirmed, err2 := m.Int64ObservableGauge("mcplive.feed.confirmed_lsn",
		metric.WithDescription("The WAL position up to which the change feed has delivered every transaction"))
	lagBytes, err3 := m.Int64ObservableGauge("mcplive.feed.lag_bytes",
		metric.WithUnit("By"), metric.WithDescription("The WAL the server wrote past the change feed's confirmed position"))
	lagSeconds, err4 := m.Float64ObservableGauge("mcplive.feed.lag_seconds",
		metric.WithUnit("s"), metric.WithDescription("How long after its commit the change feed delivered the last transaction; 0 once caught up"))
	reconnects, err5 := m.Int64ObservableCounter("mcplive.feed.reconnects",
		metric.WithDescription("Connections of the change feed made after a lost connection or a failed attempt"))
	fallbacks, err6 := m.Int64ObservableCounter("mcplive.feed.fallbacks",
		metric.WithDescription("Times the change feed re-ran every live query because it could not know what it missed"))
	for _, err := range []error{err1, err2, err3, err4, err5, err6} {
		if err != nil {
			return err
		}
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		h := feed.Health()
		source := metric.WithAttributes(attribute.String("source", string(h.Source)))
		up := int64(0)
		if h.Connected {
			up = 1
		}
		o.ObserveInt64(connected, up, source)
		o.ObserveInt64(confirmed, int64(h.Confirmed), source)
		o.ObserveInt64(lagBytes, h.LagBytes, source)
		o.ObserveFloat64(lagSeconds, h.LagSeconds, source)
		o.ObserveInt64(reconnects, int64(h.Reconnects), source)
		o.ObserveInt64(fallbacks, int64(h.Fallbacks), source)
		return nil
	}, connected, confirmed, lagBytes, lagSeconds, reconnects, fallbacks)
	if err != nil {
		return err
	}
	t.feedReg = reg
	return nil
}
