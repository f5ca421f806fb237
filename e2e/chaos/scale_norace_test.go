//go:build !race

package chaos

import "time"

// runScale is the full run: three clients of each of the five kinds, 20
// writes/s for 30 s, 15 s of quiet, a last round of writes; every client
// cut every 0.5 to 4 s, every 0.3 to 1.5 s in the quiet.
func runScale() scale {
	return scale{perKind: 3, ts: true, writesPerSecond: 20, writeFor: 30 * time.Second, quietFor: 15 * time.Second}
}
