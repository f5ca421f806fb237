// Package draw makes the decisions of the randomized tests: a seeded
// generator in Test functions, which run the same cases every time, and the
// fuzzer's bytes in Fuzz functions, which explore further. One generator,
// written once, serves both, and the values drawn from it make the edges of
// their domains common rather than one in billions.
package draw

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unicode"
)

// Checks is how many seeded cases each randomized test runs (rapid's
// default, which these tests used before).
const Checks = 100

// Choices makes the decisions of one case.
type Choices struct {
	rng  *rand.Rand // nil when the bytes decide
	data []byte     // the fuzzer's bytes not yet used
}

// Seeded decides by a generator seeded with seed.
func Seeded(seed uint64) *Choices {
	return &Choices{rng: rand.New(rand.NewPCG(seed, 0))}
}

// FromBytes decides by data. Once data is used up every choice is 0, the
// first or smallest option, so that any input makes a finite case.
func FromBytes(data []byte) *Choices {
	return &Choices{data: data}
}

// ForEachSeed runs check on the cases of seeds 1 to n, each in a subtest
// named after its seed, and stops at the first that fails, saying how to
// run it alone.
func ForEachSeed(t *testing.T, n int, check func(t *testing.T, c *Choices)) {
	t.Helper()
	for seed := uint64(1); seed <= uint64(n); seed++ {
		name := fmt.Sprintf("seed=%d", seed)
		if !t.Run(name, func(t *testing.T) { check(t, Seeded(seed)) }) {
			t.Fatalf("the case of seed %d fails; run it alone with go test -run '^%s$/^%s$'", seed, t.Name(), name)
		}
	}
}

// AddRandomInputs adds to f's seed corpus n inputs of size pseudo-random
// bytes, the same every run: cases of every kind to start from.
func AddRandomInputs(f *testing.F, n, size int) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	for range n {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
}

// Uint64n returns a number in [0, n), n > 0. From bytes it reads one byte
// per 8 bits of n-1, big-endian.
func (c *Choices) Uint64n(n uint64) uint64 {
	if c.rng != nil {
		return c.rng.Uint64N(n)
	}
	var v uint64
	for m := n - 1; m > 0; m >>= 8 {
		v = v<<8 | c.byte()
	}
	return v % n
}

// Bits returns 64 random bits.
func (c *Choices) Bits() uint64 {
	if c.rng != nil {
		return c.rng.Uint64()
	}
	var v uint64
	for range 8 {
		v = v<<8 | c.byte()
	}
	return v
}

// byte takes the next of the fuzzer's bytes, 0 past their end.
func (c *Choices) byte() uint64 {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return uint64(b)
}

// Intn returns a number in [0, n), n > 0.
func (c *Choices) Intn(n int) int { return int(c.Uint64n(uint64(n))) }

// IntRange returns a number in [lo, hi].
func (c *Choices) IntRange(lo, hi int) int { return lo + c.Intn(hi-lo+1) }

// Bool returns true or false.
func (c *Choices) Bool() bool { return c.Intn(2) == 1 }

// Another reports whether a sequence goes on: with a generator, with the
// probability that makes sequences mean steps long on average (rapid's
// Repeat); with bytes, while bytes are left.
func (c *Choices) Another(mean int) bool {
	if c.rng != nil {
		return c.rng.Float64() < float64(mean)/float64(mean+1)
	}
	return len(c.data) > 0
}

// Pick returns one of xs.
func Pick[T any](c *Choices, xs []T) T {
	return xs[c.Intn(len(xs))]
}

// PickN returns between lo and hi of xs, each drawn anew.
func PickN[T any](c *Choices, xs []T, lo, hi int) []T {
	out := make([]T, c.IntRange(lo, hi))
	for i := range out {
		out[i] = Pick(c, xs)
	}
	return out
}

// Distinct returns between lo and hi of xs (fewer if xs is shorter), each
// at most once, in a random order.
func Distinct[T any](c *Choices, xs []T, lo, hi int) []T {
	xs = append([]T(nil), xs...)
	n := c.IntRange(min(lo, len(xs)), min(hi, len(xs)))
	for i := range n {
		j := i + c.Intn(len(xs)-i)
		xs[i], xs[j] = xs[j], xs[i]
	}
	return xs[:n]
}

// Values for the randomized tests: runes, integers, floats and strings, each
// drawn so that the edges of its domain are common rather than one in
// billions, as rapid drew them.

// trickyRunes are runes that trip encoders and decoders: URI delimiters and
// escapes, quotes and backslashes, whitespace and control characters, a
// BOM, the replacement character, a direction override, JSON's line
// separator, and multi-byte letters (Ⱥ grows by a byte when lowercased).
var trickyRunes = []rune("Aa09?#&=+%/\\|~!@$^*()[]{}<>'\"`.,:;-_ \t\r\n\x00\x0b\x1b\x7f\ufeff\ufffd\u202e\u2028Ⱥé😀")

// runeTables are the Unicode categories AnyRune draws from, each as likely
// as the others so that small ones (titlecase letters, enclosing marks) are
// drawn too. Surrogates cannot be in UTF-8 and are left out.
var runeTables = []*unicode.RangeTable{
	unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo,
	unicode.Mn, unicode.Me, unicode.Mc,
	unicode.Nd, unicode.Nl, unicode.No,
	unicode.P, unicode.Sm, unicode.Sc, unicode.Sk, unicode.So,
	unicode.Z, unicode.Cc, unicode.Cf, unicode.Co,
}

// AnyRune returns a tricky rune half the time, otherwise any rune of a
// category.
func AnyRune(c *Choices) rune {
	if c.Bool() {
		return Pick(c, trickyRunes)
	}
	t := Pick(c, runeTables)
	return nthRune(t, c.Intn(tableSize(t)))
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

// RuneString returns a string of lo to hi runes drawn by r.
func RuneString(c *Choices, lo, hi int, r func(*Choices) rune) string {
	rs := make([]rune, c.IntRange(lo, hi))
	for i := range rs {
		rs[i] = r(c)
	}
	return string(rs)
}

// Signed returns an integer that fits in bits (1 to 64) bits, two's
// complement: one time in four an edge of the range or around 0, otherwise
// one of a random bit length, so that every magnitude is as likely.
func Signed(c *Choices, bits uint) int64 {
	hi := int64(uint64(1)<<(bits-1) - 1)
	if c.Intn(4) == 0 {
		return Pick(c, []int64{-hi - 1, hi, -1, 0, 1})
	}
	m := int64(c.Bits() >> (64 - c.Intn(int(bits)))) // below 2^(bits-1)
	if c.Bool() {
		return -m - 1
	}
	return m
}

// Unsigned is Signed for unsigned integers.
func Unsigned(c *Choices, bits uint) uint64 {
	if c.Intn(4) == 0 {
		return Pick(c, []uint64{0, 1, math.MaxUint64 >> (64 - bits)})
	}
	return c.Bits() >> (64 - c.Intn(int(bits)+1))
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

// Finite64 returns a finite float64: one time in four an edge, otherwise,
// as likely each, a short decimal, a number of any exponent, or any bits.
func Finite64(c *Choices) float64 {
	switch c.Intn(4) {
	case 0:
		return Pick(c, float64Edges)
	case 1:
		return float64(c.IntRange(-100_000, 100_000)) / Pick(c, []float64{1, 10, 100, 1000})
	case 2:
		f := math.Ldexp(1+float64(c.Bits()>>11)/(1<<53), c.IntRange(-1074, 1023))
		if c.Bool() {
			f = -f
		}
		return f
	default:
		for {
			if f := math.Float64frombits(c.Bits()); !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	}
}

// Finite32 is Finite64 for float32.
func Finite32(c *Choices) float32 {
	switch c.Intn(4) {
	case 0:
		return Pick(c, float32Edges)
	case 1:
		return float32(c.IntRange(-100_000, 100_000)) / Pick(c, []float32{1, 10, 100, 1000})
	case 2:
		f := float32(math.Ldexp(1+float64(c.Bits()>>40)/(1<<24), c.IntRange(-149, 127)))
		if c.Bool() {
			f = -f
		}
		return f
	default:
		for {
			f := math.Float32frombits(uint32(c.Bits()))
			if g := float64(f); !math.IsNaN(g) && !math.IsInf(g, 0) {
				return f
			}
		}
	}
}
