package pgfeed

// MaxPayloadForTest is the longest notification the feed sends, for the
// tests of package pgfeed_test.
const MaxPayloadForTest = maxPayload
