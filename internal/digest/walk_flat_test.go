package digest

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// flatRowOf and generalRowOf have the same fields json writes; the
// nil pointer at the end of generalRowOf makes its walk the general one.
type flatRowOf struct {
	A, B int32
	S    string
	C    int64
	D    int8
	T    string
	U    uint16
	N    int
	V    [3]uint8 `json:"-"`
}

type generalRowOf struct {
	A, B int32
	S    string
	C    int64
	D    int8
	T    string
	U    uint16
	N    int
	P    *int
}

// A row of integers and strings is walked as its words, then its other
// runs of memory, then its strings; the general walk (of a row with a
// pointer besides) goes field by field. Each field's bytes have a fixed
// form: integers little-endian, a string's length as a uvarint (one byte
// below 128, two from 128), then its bytes.
func TestFlatRowWalkWritesWordsOddsThenStrings(t *testing.T) {
	if reflect.TypeFor[int]().Size() != 8 {
		t.Skip("int is not a word here")
	}
	walkBytes := func(v any) []byte {
		rw := NewWalk(reflect.TypeOf(v))
		b, ok := rw.run(&walker{}, nil, v)
		if !ok {
			t.Fatalf("the walk of %T gave up", v)
		}
		return b
	}
	for _, n := range []int{0, 1, 127, 128, 129, 300, 2000} { // all under the flush bound
		s := strings.Repeat("x", n)
		f := flatRowOf{A: -1, B: 1 << 30, S: s, C: -1 << 40, D: -3, T: s + "y", U: 0xfffe, N: -7, V: [3]uint8{9, 9, 9}}
		g := generalRowOf{A: f.A, B: f.B, S: f.S, C: f.C, D: f.D, T: f.T, U: f.U, N: f.N}
		a := binary.LittleEndian.AppendUint32(nil, uint32(f.A))
		a = binary.LittleEndian.AppendUint32(a, uint32(f.B)) // with A, a word
		// C and D, side by side, are one run of 9 bytes: not words.
		c := binary.LittleEndian.AppendUint64(nil, uint64(f.C))
		d := []byte{byte(f.D)}
		u := binary.LittleEndian.AppendUint16(nil, f.U)
		nn := binary.LittleEndian.AppendUint64(nil, uint64(f.N))
		ss := append(binary.AppendUvarint(nil, uint64(len(f.S))), f.S...)
		tt := append(binary.AppendUvarint(nil, uint64(len(f.T))), f.T...)
		join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
		if got, want := walkBytes(f), join(a, nn, c, d, u, ss, tt); !bytes.Equal(got, want) {
			t.Errorf("strings of %d bytes: the flat walk wrote\n%x\nwant\n%x", n, got, want)
		}
		if got, want := walkBytes(g), join(a, ss, c, d, tt, u, nn, []byte{0}); !bytes.Equal(got, want) { // P's nil mark last
			t.Errorf("strings of %d bytes: the general walk wrote\n%x\nwant\n%x", n, got, want)
		}
	}
}

// A row of long strings is hashed as its bytes fill the walker's buffer,
// string by string, as the general walk does: the buffer never holds
// much more than walkFlush and one string, however many the row has.
func TestFlatRowWalkHashesAsItFills(t *testing.T) {
	type wide struct{ A, B, C, D, E, F, G, H string }
	s := strings.Repeat("x", walkFlush/2)
	row := wide{s, s, s, s, s, s, s, s}
	rw := NewWalk(reflect.TypeOf(row))
	ds := NewHasher()
	w := &walker{seeds: &ds.seeds}
	b, ok := rw.run(w, nil, row)
	if !ok {
		t.Fatal("the walk gave up")
	}
	if limit := walkFlush + len(s) + binary.MaxVarintLen64; cap(b) > 2*limit {
		t.Errorf("the buffer grew to %d bytes for a row of %d; want it hashed as it fills (about %d)", cap(b), 8*len(s), limit)
	}
	if !w.flushed {
		t.Error("nothing was hashed before the row ended")
	}
}

// wordRow is a row of words and strings only, as most results' rows are.
type wordRow struct {
	A    int64
	S    string
	B, C int
	T    string
	U    uint64
}

// The walk of a row of words and strings writes its words, then its
// strings, length first: a fixed form for the type, which tells rows apart
// as the fields in their order would (each string's length says where it
// ends).
func TestWordRowWalkWritesWordsThenStrings(t *testing.T) {
	if reflect.TypeFor[int]().Size() != 8 {
		t.Skip("int is not a word here")
	}
	big := int64(1 << 50) // not a constant: 1 << 50 overflows int on 386, where the file must still build
	for _, n := range []int{0, 1, 127, 128, 300} {
		s := strings.Repeat("x", n)
		r := wordRow{A: -1 << 40, S: s, B: -7, C: int(big), T: s + "y", U: 1<<64 - 2}
		rw := NewWalk(reflect.TypeOf(r))
		got, ok := rw.run(&walker{}, nil, r)
		if !ok {
			t.Fatal("the walk gave up")
		}
		var want []byte
		for _, w := range []uint64{uint64(r.A), uint64(r.B), uint64(r.C), r.U} {
			want = binary.LittleEndian.AppendUint64(want, w)
		}
		want = append(binary.AppendUvarint(want, uint64(len(r.S))), r.S...)
		want = append(binary.AppendUvarint(want, uint64(len(r.T))), r.T...)
		if !bytes.Equal(got, want) {
			t.Errorf("strings of %d bytes: the walk wrote\n%x\nwant\n%x", n, got, want)
		}
	}
	// Moving a byte from one string to the next is a different row.
	a, b := wordRow{S: "ab", T: "c"}, wordRow{S: "a", T: "bc"}
	ds := NewHasher()
	rw := NewWalk(reflect.TypeOf(a))
	da, _ := ds.Of(a, rw)
	db, _ := ds.Of(b, rw)
	if da == db {
		t.Error("rows whose strings split the same bytes differently have one digest")
	}
}
