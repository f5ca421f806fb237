package loadkit

import (
	"math"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value that at least p% of the values
// do not exceed. It is 0 for no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted)) * p / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Ms rounds d for printing, to a tenth of a millisecond.
func Ms(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
