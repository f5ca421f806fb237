package adapter

import (
	"cmp"
	"slices"
)

// reached is a query a change reached, and by which key ("" for all);
// seq is the query's, kept beside it so that sorting a thousand of them
// does not chase a pointer for every comparison.
type reached struct {
	seq uint64
	q   *query
	key string
}

// sortReached sorts rs by seq, using buf (grown as needed) as scratch, and
// returns the sorted entries and the scratch, which is the other of the
// two arrays: the caller keeps both for the next change.
//
// Why not slices.SortFunc alone: a change reaches every query of a table
// at once, and comparison sorting a thousand of them took 0.15 ms, a
// twentieth of the registry's own cost in the fan-out benchmark. Sequence
// numbers are dense (queries are numbered as they are made), so a radix
// sort on the bytes in which they differ (two passes while they differ in
// their two lowest bytes only) takes a seventh of the time
// (BenchmarkSortReached).
func sortReached(rs, buf []reached) (sorted, scratch []reached) {
	if len(rs) < radixMin {
		slices.SortFunc(rs, bySeq)
		return rs, buf
	}
	var differ uint64 // the bits in which some seq differs from the first
	for _, r := range rs {
		differ |= r.seq ^ rs[0].seq
	}
	buf = slices.Grow(buf[:0], len(rs))[:len(rs)]
	for shift := uint(0); shift < 64; shift += 8 {
		if (differ>>shift)&0xff == 0 {
			continue // every entry has the same byte here
		}
		var at [256]int // where each byte value's entries go
		for _, r := range rs {
			at[byte(r.seq>>shift)]++
		}
		n := 0
		for b, c := range at {
			at[b], n = n, n+c
		}
		for _, r := range rs {
			d := byte(r.seq >> shift)
			buf[at[d]] = r
			at[d]++
		}
		rs, buf = buf, rs
	}
	return rs, buf
}

// radixMin is the fewest entries sortReached sorts by radix: below it, the
// histogram of a pass costs more than comparing.
const radixMin = 64

// bySeq orders reached entries by their queries' sequence numbers.
func bySeq(a, b reached) int { return cmp.Compare(a.seq, b.seq) }
