package pgfeed

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is the delay before reconnection attempt number attempt (0 for
// the first): minDelay doubled attempt times, capped at maxDelay, then drawn
// at random from its upper half. The random part spreads the instances that
// lost the database at the same moment; the fixed half keeps a flapping
// server from being hammered.
func backoff(minDelay, maxDelay time.Duration, attempt int) time.Duration {
	d := minDelay
	for i := 0; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits for d or until ctx ends, and reports whether the whole delay
// passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
