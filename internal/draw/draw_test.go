package draw

import (
	"slices"
	"testing"
)

func TestChoicesFromBytes(t *testing.T) {
	c := FromBytes([]byte{7, 0x01, 0x02, 200, 9})
	if got := c.Intn(10); got != 7 {
		t.Errorf("intn(10) = %d, want 7 (one byte)", got)
	}
	if got := c.Uint64n(1000); got != 0x0102 {
		t.Errorf("uint64n(1000) = %d, want 258 (two bytes, big-endian)", got)
	}
	if got := c.IntRange(1, 4); got != 1+200%4 {
		t.Errorf("intRange(1, 4) = %d, want %d", got, 1+200%4)
	}
	if !c.Another(30) {
		t.Error("another is false with a byte left")
	}
	c.Bool()
	if c.Another(30) || c.Bits() != 0 || c.Intn(5) != 0 || len(Distinct(c, []int{1, 2, 3}, 1, 3)) != 1 {
		t.Error("used-up bytes do not make the smallest choices")
	}
}

func TestChoicesSeeded(t *testing.T) {
	draw := func(c *Choices) (out []int) {
		for range 20 {
			out = append(out, c.IntRange(-3, 3))
		}
		return append(out, Distinct(c, []int{1, 2, 3, 4, 5}, 0, 5)...)
	}
	a, b := draw(Seeded(42)), draw(Seeded(42))
	if !slices.Equal(a, b) {
		t.Fatalf("seed 42 drew %v, then %v", a, b)
	}
	for _, v := range a[:20] {
		if v < -3 || v > 3 {
			t.Fatalf("intRange(-3, 3) drew %d", v)
		}
	}
	c := Seeded(7)
	for range 200 {
		d := Distinct(c, []string{"a", "b", "c", "d"}, 1, 3)
		if len(d) < 1 || len(d) > 3 || len(d) != len(slices.Compact(slices.Sorted(slices.Values(d)))) {
			t.Fatalf("Distinct(4 items, 1, 3) = %q", d)
		}
	}
	steps := 0
	for range 1000 {
		for c.Another(30) {
			steps++
		}
	}
	if mean := float64(steps) / 1000; mean < 25 || mean > 35 {
		t.Errorf("another(30) made sequences of %.1f steps on average", mean)
	}
}
