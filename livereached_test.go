package adapter

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortReached(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		n    int
		seq  func(i int) uint64
	}{
		{"empty", 0, nil},
		{"few, by comparison", radixMin - 1, func(i int) uint64 { return uint64(i) * 7 }},
		{"dense, one byte", 200, func(i int) uint64 { return 1 + uint64(i) }},
		{"dense, two bytes", 5000, func(i int) uint64 { return 1 + uint64(i) }},
		{"dense, far from zero", 1000, func(i int) uint64 { return 1<<40 + uint64(i) }},
		{"sparse, every byte", 1000, func(int) uint64 { return rng.Uint64() }},
		{"top byte only", 300, func(i int) uint64 { return uint64(i%256) << 56 }},
		{"equal seqs", 100, func(int) uint64 { return 42 }},
	}
	var buf []reached
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := make([]reached, tt.n)
			for i := range rs {
				rs[i] = reached{seq: tt.seq(i), key: string(rune('a' + i%26))}
			}
			rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			want := slices.Clone(rs)
			slices.SortStableFunc(want, bySeq)
			sorted, scratch := sortReached(rs, buf)
			if len(sorted) != tt.n {
				t.Fatalf("%d entries, want %d", len(sorted), tt.n)
			}
			for i := range sorted {
				if sorted[i].seq != want[i].seq {
					t.Fatalf("entry %d: seq %d, want %d", i, sorted[i].seq, want[i].seq)
				}
			}
			// By radix, the sort is stable: the very entries, in order.
			if tt.n >= radixMin && !slices.Equal(sorted, want) {
				t.Fatal("radix sort lost, changed or reordered an entry")
			}
			if tt.n > 0 && len(scratch) > 0 && &scratch[0] == &sorted[0] {
				t.Fatal("scratch is the sorted array")
			}
			buf = scratch[:0]
		})
	}
}

func FuzzSortReached(f *testing.F) {
	f.Add(uint64(1), uint64(1000), 200)
	f.Add(uint64(1<<63), uint64(1<<62), 70)
	f.Fuzz(func(t *testing.T, base, spread uint64, n int) {
		n = min(max(n, 0), 3000)
		rng := rand.New(rand.NewPCG(base, spread))
		rs := make([]reached, n)
		for i := range rs {
			s := base
			if spread > 0 {
				s += rng.Uint64N(spread)
			}
			rs[i] = reached{seq: s}
		}
		sorted, _ := sortReached(slices.Clone(rs), nil)
		want := slices.Clone(rs)
		slices.SortFunc(want, bySeq)
		if !slices.Equal(sorted, want) {
			t.Fatalf("sorted %d seqs from %d over %d wrongly", n, base, spread)
		}
	})
}

// BenchmarkSortReached sorts what a change to every query of a table
// reaches, 1,000 queries made one after another, shuffled as the index
// gives them: by radix (sortReached) and by comparison.
func BenchmarkSortReached(b *testing.B) {
	src := make([]reached, 1000)
	for i := range src {
		src[i] = reached{seq: 5000 + uint64(i)}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	b.Run("radix", func(b *testing.B) {
		rs, buf := make([]reached, len(src)), []reached(nil)
		for b.Loop() {
			rs = append(rs[:0], src...)
			rs, buf = sortReached(rs, buf)
		}
	})
	b.Run("comparison", func(b *testing.B) {
		rs := make([]reached, len(src))
		for b.Loop() {
			copy(rs, src)
			slices.SortFunc(rs, bySeq)
		}
	})
}
