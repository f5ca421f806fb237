package adapter

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

// The one-loop walk of a row of integers and strings writes the bytes the
// general walk does (the digest's bytes did not change), and those bytes
// are each field's in a fixed form: integers little-endian, a string's
// length as a uvarint (one byte below 128, two from 128), then its bytes.
func TestFlatRowWalkWritesTheGeneralWalksBytes(t *testing.T) {
	walkBytes := func(v any) []byte {
		rw := newResultWalk(reflect.TypeOf(v))
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
		var want []byte
		want = binary.LittleEndian.AppendUint32(want, uint32(f.A))
		want = binary.LittleEndian.AppendUint32(want, uint32(f.B))
		want = append(binary.AppendUvarint(want, uint64(len(f.S))), f.S...)
		want = binary.LittleEndian.AppendUint64(want, uint64(f.C))
		want = append(want, byte(f.D))
		want = append(binary.AppendUvarint(want, uint64(len(f.T))), f.T...)
		want = binary.LittleEndian.AppendUint16(want, f.U)
		if reflect.TypeFor[int]().Size() == 4 {
			want = binary.LittleEndian.AppendUint32(want, uint32(f.N))
		} else {
			want = binary.LittleEndian.AppendUint64(want, uint64(f.N))
		}
		flat, general := walkBytes(f), walkBytes(g)
		if !bytes.Equal(flat, want) {
			t.Errorf("strings of %d bytes: the flat walk wrote\n%x\nwant\n%x", n, flat, want)
		}
		if !bytes.Equal(general, append(want, 0)) { // and P's nil mark
			t.Errorf("strings of %d bytes: the general walk wrote\n%x\nwant\n%x", n, general, append(want, 0))
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
	rw := newResultWalk(reflect.TypeOf(row))
	ds := newDigests()
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
