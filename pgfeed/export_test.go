package pgfeed

// MaxPayloadForTest is the longest notification the feed sends, for the
// tests of package pgfeed_test.
const MaxPayloadForTest = maxPayload

// VisibilityWaits counts the transactions f waited for to become visible.
func VisibilityWaits(f *Feed) int64 { return f.waits.Load() }
