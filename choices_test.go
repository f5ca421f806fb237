package adapter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The randomized tests draw their cases from choices: a seeded math/rand/v2
// generator in the Test functions, which run the same cases every time, and
// the fuzzer's bytes in the Fuzz functions, which explore further. One
// generator, written once, serves both.

// checks is how many seeded cases each randomized test runs (rapid's
// default, which these tests used before).
const checks = 100

// choices makes the decisions of one case.
type choices struct {
	rng  *rand.Rand // nil when the bytes decide
	data []byte     // the fuzzer's bytes not yet used
}

func seeded(seed uint64) *choices {
	return &choices{rng: rand.New(rand.NewPCG(seed, 0))}
}

// fromBytes decides by data. Once data is used up every choice is 0, the
// first or smallest option, so that any input makes a finite case.
func fromBytes(data []byte) *choices {
	return &choices{data: data}
}

// forEachSeed runs check on the cases of seeds 1 to n, each in a subtest
// named after its seed, and stops at the first that fails, saying how to
// run it alone.
func forEachSeed(t *testing.T, n int, check func(t *testing.T, c *choices)) {
	t.Helper()
	for seed := uint64(1); seed <= uint64(n); seed++ {
		name := fmt.Sprintf("seed=%d", seed)
		if !t.Run(name, func(t *testing.T) { check(t, seeded(seed)) }) {
			t.Fatalf("the case of seed %d fails; run it alone with go test -run '^%s$/^%s$'", seed, t.Name(), name)
		}
	}
}

// addRandomInputs adds to f's seed corpus n inputs of size pseudo-random
// bytes, the same every run: cases of every kind to start from.
func addRandomInputs(f *testing.F, n, size int) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	for range n {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
}

// uint64n returns a number in [0, n), n > 0. From bytes it reads one byte
// per 8 bits of n-1, big-endian.
func (c *choices) uint64n(n uint64) uint64 {
	if c.rng != nil {
		return c.rng.Uint64N(n)
	}
	var v uint64
	for m := n - 1; m > 0; m >>= 8 {
		v = v<<8 | c.byte()
	}
	return v % n
}

// bits returns 64 random bits.
func (c *choices) bits() uint64 {
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
func (c *choices) byte() uint64 {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return uint64(b)
}

// intn returns a number in [0, n), n > 0.
func (c *choices) intn(n int) int { return int(c.uint64n(uint64(n))) }

// intRange returns a number in [lo, hi].
func (c *choices) intRange(lo, hi int) int { return lo + c.intn(hi-lo+1) }

func (c *choices) bool() bool { return c.intn(2) == 1 }

// another reports whether a sequence goes on: with a generator, with the
// probability that makes sequences mean steps long on average (rapid's
// Repeat); with bytes, while bytes are left.
func (c *choices) another(mean int) bool {
	if c.rng != nil {
		return c.rng.Float64() < float64(mean)/float64(mean+1)
	}
	return len(c.data) > 0
}

// pick returns one of xs.
func pick[T any](c *choices, xs []T) T {
	return xs[c.intn(len(xs))]
}

// pickN returns between lo and hi of xs, each drawn anew.
func pickN[T any](c *choices, xs []T, lo, hi int) []T {
	out := make([]T, c.intRange(lo, hi))
	for i := range out {
		out[i] = pick(c, xs)
	}
	return out
}

// distinct returns between lo and hi of xs (fewer if xs is shorter), each
// at most once, in a random order.
func distinct[T any](c *choices, xs []T, lo, hi int) []T {
	xs = append([]T(nil), xs...)
	n := c.intRange(min(lo, len(xs)), min(hi, len(xs)))
	for i := range n {
		j := i + c.intn(len(xs)-i)
		xs[i], xs[j] = xs[j], xs[i]
	}
	return xs[:n]
}

func TestChoicesFromBytes(t *testing.T) {
	c := fromBytes([]byte{7, 0x01, 0x02, 200, 9})
	if got := c.intn(10); got != 7 {
		t.Errorf("intn(10) = %d, want 7 (one byte)", got)
	}
	if got := c.uint64n(1000); got != 0x0102 {
		t.Errorf("uint64n(1000) = %d, want 258 (two bytes, big-endian)", got)
	}
	if got := c.intRange(1, 4); got != 1+200%4 {
		t.Errorf("intRange(1, 4) = %d, want %d", got, 1+200%4)
	}
	if !c.another(30) {
		t.Error("another is false with a byte left")
	}
	c.bool()
	if c.another(30) || c.bits() != 0 || c.intn(5) != 0 || len(distinct(c, []int{1, 2, 3}, 1, 3)) != 1 {
		t.Error("used-up bytes do not make the smallest choices")
	}
}

func TestChoicesSeeded(t *testing.T) {
	draw := func(c *choices) (out []int) {
		for range 20 {
			out = append(out, c.intRange(-3, 3))
		}
		return append(out, distinct(c, []int{1, 2, 3, 4, 5}, 0, 5)...)
	}
	a, b := draw(seeded(42)), draw(seeded(42))
	if !slices.Equal(a, b) {
		t.Fatalf("seed 42 drew %v, then %v", a, b)
	}
	for _, v := range a[:20] {
		if v < -3 || v > 3 {
			t.Fatalf("intRange(-3, 3) drew %d", v)
		}
	}
	c := seeded(7)
	for range 200 {
		d := distinct(c, []string{"a", "b", "c", "d"}, 1, 3)
		if len(d) < 1 || len(d) > 3 || len(d) != len(slices.Compact(slices.Sorted(slices.Values(d)))) {
			t.Fatalf("distinct(4 items, 1, 3) = %q", d)
		}
	}
	steps := 0
	for range 1000 {
		for c.another(30) {
			steps++
		}
	}
	if mean := float64(steps) / 1000; mean < 25 || mean > 35 {
		t.Errorf("another(30) made sequences of %.1f steps on average", mean)
	}
}
