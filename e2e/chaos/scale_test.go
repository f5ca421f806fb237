package chaos

import "time"

// A scale is the size of one run.
type scale struct {
	// perKind clients of each kind: go-sdk on each era and, when ts,
	// each of the TypeScript kinds (tsKinds).
	perKind int
	ts      bool
	// writesPerSecond for writeFor, then none for quietFor, then one
	// more round (each watched customer once) at writesPerSecond; the
	// cuts all along, faster in the quiet.
	writesPerSecond int
	writeFor        time.Duration
	quietFor        time.Duration
}

// writes is how many writes the run makes.
func (s scale) writes() int { return s.writesPerSecond * int(s.writeFor/time.Second) }
