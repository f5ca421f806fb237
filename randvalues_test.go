package adapter

import (
	"math"
	"unicode"
)

// Values for the randomized tests: runes, integers, floats and strings, each
// drawn so that the edges of its domain are common rather than one in
// billions, as rapid drew them.

// trickyRunes are runes that trip encoders and decoders: URI delimiters and
// escapes, quotes and backslashes, whitespace and control characters, a
// BOM, the replacement character, a direction override, JSON's line
// separator, and multi-byte letters (Ⱥ grows by a byte when lowercased).
var trickyRunes = []rune("Aa09?#&=+%/\\|~!@$^*()[]{}<>'\"`.,:;-_ \t\r\n\x00\x0b\x1b\x7f\ufeff\ufffd\u202e\u2028Ⱥé😀")

// runeTables are the Unicode categories anyRune draws from, each as likely
// as the others so that small ones (titlecase letters, enclosing marks) are
// drawn too. Surrogates cannot be in UTF-8 and are left out.
var runeTables = []*unicode.RangeTable{
	unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo,
	unicode.Mn, unicode.Me, unicode.Mc,
	unicode.Nd, unicode.Nl, unicode.No,
	unicode.P, unicode.Sm, unicode.Sc, unicode.Sk, unicode.So,
	unicode.Z, unicode.Cc, unicode.Cf, unicode.Co,
}

// anyRune returns a tricky rune half the time, otherwise any rune of a
// category.
func anyRune(c *choices) rune {
	if c.bool() {
		return pick(c, trickyRunes)
	}
	t := pick(c, runeTables)
	return nthRune(t, c.intn(tableSize(t)))
}

func tableSize(t *unicode.RangeTable) int {
	n := 0
	for _, r := range t.R16 {
		n += int((r.Hi-r.Lo)/r.Stride) + 1
	}
	for _, r := range t.R32 {
		n += int((r.Hi-r.Lo)/r.Stride) + 1
	}
	return n
}

// nthRune returns the rune at index i of t, counted in order.
func nthRune(t *unicode.RangeTable, i int) rune {
	for _, r := range t.R16 {
		if n := int((r.Hi-r.Lo)/r.Stride) + 1; i >= n {
			i -= n
			continue
		}
		return rune(r.Lo) + rune(i)*rune(r.Stride)
	}
	for _, r := range t.R32 {
		if n := int((r.Hi-r.Lo)/r.Stride) + 1; i >= n {
			i -= n
			continue
		}
		return rune(r.Lo) + rune(i)*rune(r.Stride)
	}
	panic("rune index out of range")
}

// runeString returns a string of lo to hi runes drawn by r.
func runeString(c *choices, lo, hi int, r func(*choices) rune) string {
	rs := make([]rune, c.intRange(lo, hi))
	for i := range rs {
		rs[i] = r(c)
	}
	return string(rs)
}

// signed returns an integer that fits in bits (1 to 64) bits, two's
// complement: one time in four an edge of the range or around 0, otherwise
// one of a random bit length, so that every magnitude is as likely.
func signed(c *choices, bits uint) int64 {
	hi := int64(uint64(1)<<(bits-1) - 1)
	if c.intn(4) == 0 {
		return pick(c, []int64{-hi - 1, hi, -1, 0, 1})
	}
	m := int64(c.bits() >> (64 - c.intn(int(bits)))) // below 2^(bits-1)
	if c.bool() {
		return -m - 1
	}
	return m
}

// unsigned is signed for unsigned integers.
func unsigned(c *choices, bits uint) uint64 {
	if c.intn(4) == 0 {
		return pick(c, []uint64{0, 1, math.MaxUint64 >> (64 - bits)})
	}
	return c.bits() >> (64 - c.intn(int(bits)+1))
}

// float64Edges are where formatting and parsing change their ways: zeros,
// the extremes, the smallest normal, and where JSON and the URI tests
// switch between plain and exponent notation.
var float64Edges = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 1.5, 1 << 53, 1<<53 + 2,
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	0x1p-1022, 1e20, 1e21, 9.999999999999999e20, 1e-6, 1e-7, 1e-20, -1e21,
}

var float32Edges = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 0.1, 1.5, 1 << 24, 1<<24 + 2,
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	0x1p-126, 1e20, 1e21, 1e-6, 1e-7, 1e-20,
}

// finite64 returns a finite float64: one time in four an edge, otherwise,
// as likely each, a short decimal, a number of any exponent, or any bits.
func finite64(c *choices) float64 {
	switch c.intn(4) {
	case 0:
		return pick(c, float64Edges)
	case 1:
		return float64(c.intRange(-100_000, 100_000)) / pick(c, []float64{1, 10, 100, 1000})
	case 2:
		f := math.Ldexp(1+float64(c.bits()>>11)/(1<<53), c.intRange(-1074, 1023))
		if c.bool() {
			f = -f
		}
		return f
	default:
		for {
			if f := math.Float64frombits(c.bits()); !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	}
}

// finite32 is finite64 for float32.
func finite32(c *choices) float32 {
	switch c.intn(4) {
	case 0:
		return pick(c, float32Edges)
	case 1:
		return float32(c.intRange(-100_000, 100_000)) / pick(c, []float32{1, 10, 100, 1000})
	case 2:
		f := float32(math.Ldexp(1+float64(c.bits()>>40)/(1<<24), c.intRange(-149, 127)))
		if c.bool() {
			f = -f
		}
		return f
	default:
		for {
			f := math.Float32frombits(uint32(c.bits()))
			if g := float64(f); !math.IsNaN(g) && !math.IsInf(g, 0) {
				return f
			}
		}
	}
}
