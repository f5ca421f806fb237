package digest

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unsafe"
)

// The walk: the digest of a result of the command's own type, made from
// the Go values json would write rather than from the JSON itself.
//
// A digest must change when the JSON does. Within one Go type the JSON is
// a function of the values json reads (the exported fields it does not
// skip), and two different such values write two different texts: so
// hashing those values, each in a fixed binary form (a number's bits, a
// string's length and bytes, a slice's nil mark and length), tells apart
// exactly what the JSON tells apart, without producing the JSON. On a
// month of the example's orders (15 rows of five fields) that is a fifth
// of the cost of json.Encoder, whose reflection was a third of the
// fan-out benchmark's CPU (docs/performance.md).
//
// The walk handles plain data: booleans, numbers, strings, pointers,
// slices, arrays and structs of those. Whatever has rules of its own it
// hands to encoding/json and hashes json's bytes in place: a type with a
// MarshalJSON or MarshalText method (where json would call it: a pointer
// method only on an addressable value, as json does), maps (json sorts
// their keys), interfaces, and structs whose fields json promotes or
// omits by a method (embedded fields, omitzero with IsZero). It does not
// mirror json's encoding; it only follows which values json reads.
//
// Where json fails (NaN, a channel, a cycle), the walk gives up and the
// result is digested as JSON, so that the error is json's word for word.
// Pointers and slices nested deeper than json's cycle check are given up
// on too: a deep but finite value is digested as JSON.
//
// The walk reads the values through unsafe pointers, at the offsets and
// sizes reflect gives for the type when the walk is made: a reflect.Value
// for every field made the walk about 1.6 times slower. It only reads, and
// only memory of the value's own type; a result's top level, which json
// sees unaddressable, is copied into scratch memory of its type first.
//
// One difference, in the safe direction: json writes every invalid UTF-8
// byte of a string as U+FFFD, so two strings invalid in different ways
// can write alike; the walk tells them apart. A client may then hear of a
// change it cannot see; it never misses one.

// walkFunc appends to b what json would write of the value at p, and
// returns b; false when json would fail or the value is too deep, and the
// whole result is to be digested as JSON. The bytes travel as an argument,
// not in the walker: stored in it, every append was a pointer written to
// the heap, which the garbage collector's write barrier taxed while it
// marked (7.5% of the CPU of the NoChange benchmark).
type walkFunc func(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool)

// Walk is the walk of one result type, made when its command is
// declared.
type Walk struct {
	typ reflect.Type
	// walk walks a value of typ at an unaddressable place.
	walk walkFunc
	// scratch holds *typ: where a result is copied to be walked.
	scratch sync.Pool
}

// maxWalkDepth is json's depth before it starts looking for cycles.
const maxWalkDepth = 1000

// NewWalk makes the walk of results of type t; nil for an
// interface type, whose values may be of any type: those are digested as
// JSON, so that values of two types that json writes alike have one
// digest.
func NewWalk(t reflect.Type) *Walk {
	if t.Kind() == reflect.Interface {
		return nil
	}
	p := walkPlanner{walks: map[walkKey]*walkFunc{}}
	rw := &Walk{typ: t, walk: *p.of(t, false)}
	rw.scratch.New = func() any { return reflect.New(t).Interface() }
	return rw
}

// Slot is a *R, R the walk's type, zero: a place for a result to be
// written to and digested in place (Hasher.At). Give it back with PutSlot,
// zero again (Clear).
func (rw *Walk) Slot() any { return rw.scratch.Get() }

// PutSlot gives back a slot of Slot, zero.
func (rw *Walk) PutSlot(p any) { rw.scratch.Put(p) }

// Value is *p, p a *R of rw's type R from its scratch, as an R: what
// the command returned, as json would be given it.
func (rw *Walk) Value(p any) any { return reflect.ValueOf(p).Elem().Interface() }

// Clear zeroes *p, p a *R of rw's type R from its scratch.
func (rw *Walk) Clear(p any) { reflect.ValueOf(p).Elem().SetZero() }

// run walks v, of type rw.typ, into w: through a copy in scratch memory,
// so that the walk reads it by pointer.
func (rw *Walk) run(w *walker, b []byte, v any) ([]byte, bool) {
	sp := rw.scratch.Get()
	scratch := reflect.ValueOf(sp)
	scratch.Elem().Set(reflect.ValueOf(v))
	b, ok := rw.walk(w, b, scratch.UnsafePointer())
	scratch.Elem().SetZero() // keep nothing of the result alive
	rw.scratch.Put(sp)
	return b, ok
}

// walkKey is a type, at an addressable place or not: json calls a pointer
// method only where it can take the address.
type walkKey struct {
	t    reflect.Type
	addr bool
}

// walkPlanner makes the walks of the types a result type reaches, once
// each; a recursive type's walk refers to itself through its pointer.
type walkPlanner struct {
	walks map[walkKey]*walkFunc
}

func (p *walkPlanner) of(t reflect.Type, addr bool) *walkFunc {
	k := walkKey{t, addr}
	if f, ok := p.walks[k]; ok {
		return f
	}
	f := new(walkFunc)
	p.walks[k] = f
	*f = p.make(t, addr)
	return f
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
	jsonNumberType    = reflect.TypeFor[json.Number]()
)

func marshals(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)
}

// make is the walk of t: json's, for a type whose marshaling method json
// calls there.
func (p *walkPlanner) make(t reflect.Type, addr bool) walkFunc {
	if marshals(t) || addr && t.Kind() != reflect.Pointer && marshals(reflect.PointerTo(t)) {
		return walkJSON(t, addr)
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return walkFixed1
	case reflect.Int16, reflect.Uint16:
		return walkFixed2
	case reflect.Int32, reflect.Uint32:
		return walkFixed4
	case reflect.Int64, reflect.Uint64:
		return walkFixed8
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		if t.Size() == 4 { // 386, arm: reading 8 bytes would read past it
			return walkFixed4
		}
		return walkFixed8
	case reflect.Float32:
		return walkFloat32
	case reflect.Float64:
		return walkFloat64
	case reflect.String:
		if t == jsonNumberType {
			return walkJSON(t, addr) // json checks it, and writes "" as 0
		}
		return walkString
	case reflect.Pointer:
		return walkPointer(p.of(t.Elem(), true))
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Uint8 && !marshals(reflect.PointerTo(e)) {
			return walkBytes // json writes base64
		}
		return walkSlice(p.of(t.Elem(), true), t.Elem().Size())
	case reflect.Array:
		return walkArray(p.of(t.Elem(), addr), t.Elem().Size(), t.Len())
	case reflect.Struct:
		return p.structWalk(t, addr)
	case reflect.Map, reflect.Interface:
		return walkJSON(t, addr)
	default: // channels, functions, complex numbers: json fails
		return func(_ *walker, b []byte, _ unsafe.Pointer) ([]byte, bool) { return b, false }
	}
}

// structWalk walks the fields json writes, in order, each after whether
// json leaves it out (omitempty, omitzero); json's own for a struct whose
// fields it promotes or omits by method, one where two fields share a
// name (json writes one of them, or neither), or one with a tag name the
// walk does not vouch for (json names a field whose tag name it rejects
// after the field).
func (p *walkPlanner) structWalk(t reflect.Type, addr bool) walkFunc {
	var ops []fieldOp
	names := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		omit, byMethod := omission(sf.Type, opts)
		if sf.Anonymous || byMethod {
			return walkJSON(t, addr)
		}
		if !sf.IsExported() || tag == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if !plainName(name) || names[name] {
			return walkJSON(t, addr)
		}
		names[name] = true
		ops = appendFieldOp(ops, p.fieldOp(sf, addr, omit))
	}
	if words, odd, strs, ok := flatRow(ops); ok {
		return func(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
			for _, off := range words {
				b = appendWord(b, unsafe.Add(p, off))
			}
			for _, op := range odd {
				b = appendMemory(b, unsafe.Add(p, op.offset), op.size)
			}
			for _, off := range strs {
				// Hashed as it fills, as walkString does: a row of
				// many long strings is not held whole first.
				b = w.flushIfFull(appendString(b, *(*string)(unsafe.Add(p, off))))
			}
			return b, true
		}
	}
	return func(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
		for i := range ops {
			op := &ops[i]
			fp := unsafe.Add(p, op.offset)
			switch op.kind {
			case opMemory:
				b = appendMemory(b, fp, op.size)
				continue
			case opString:
				b, _ = walkString(w, b, fp)
				continue
			}
			if op.omit != nil {
				omitted := op.omit(fp)
				if b = nilMark(b, omitted); omitted {
					continue
				}
			}
			var ok bool
			if b, ok = (*op.walk)(w, b, fp); !ok {
				return b, false
			}
		}
		return b, true
	}
}

// fieldOp is how a struct's walk handles one field, or a run of
// neighbouring fields: booleans and integers json never leaves out are
// their bytes in memory, copied at once (opMemory; a run of them, with no
// padding between, is one copy), strings json never leaves out are
// walked in place (opString), and anything else through its own walk
// (opWalk). On a fan-out's rows, calling a walk for every field was half
// of the digest.
type fieldOp struct {
	kind   fieldOpKind
	offset uintptr
	size   uintptr                   // opMemory: how many bytes
	walk   *walkFunc                 // opWalk
	omit   func(unsafe.Pointer) bool // opWalk: nil when json never leaves it out
}

type fieldOpKind uint8

const (
	opWalk fieldOpKind = iota
	opMemory
	opString
)

// fieldOp is the op of field sf, which json leaves out by omit (nil for
// never).
func (p *walkPlanner) fieldOp(sf reflect.StructField, addr bool, omit func(unsafe.Pointer) bool) fieldOp {
	op := fieldOp{kind: opWalk, offset: sf.Offset, walk: p.of(sf.Type, addr), omit: omit}
	t := sf.Type
	if omit != nil || marshals(t) || addr && marshals(reflect.PointerTo(t)) {
		return op
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		op.kind, op.size = opMemory, t.Size()
	case reflect.String:
		if t != jsonNumberType {
			op.kind = opString
		}
	}
	return op
}

// flatRow reports whether ops are memory and strings only: a struct whose
// walk never fails and needs no walker but to flush, the rows of most
// results. Its walk takes the row's whole words of memory (words, their
// offsets), then its other runs of memory (odd: booleans, narrow integers),
// then its strings, each length first: loops without a branch, which
// made the digest of a page of orders a sixth cheaper than one loop over
// the fields in their order. For one type the form is fixed, and tells
// every row from every other as the fields in their order would.
func flatRow(ops []fieldOp) (words []uintptr, odd []fieldOp, strs []uintptr, ok bool) {
	for _, op := range ops {
		switch {
		case op.kind == opMemory && op.size%8 == 0 && op.size <= 64:
			for off := uintptr(0); off < op.size; off += 8 {
				words = append(words, op.offset+off)
			}
		case op.kind == opMemory:
			odd = append(odd, op)
		case op.kind == opString:
			strs = append(strs, op.offset)
		default:
			return nil, nil, nil, false
		}
	}
	return words, odd, strs, true
}

// appendMemory appends the size bytes at p. A row's integers are a word
// or two, which are stored at once; append of a slice of them was a call
// to memmove for every field, a fifth of the digest. Each word is read as
// bytes, which the compiler makes one load where the CPU allows any
// alignment: a run of int32s or bytes need not be aligned to 8, and some
// CPUs trap on such a load.
func appendMemory(b []byte, p unsafe.Pointer, size uintptr) []byte {
	if size%8 != 0 || size > 64 {
		return append(b, unsafe.Slice((*byte)(p), size)...)
	}
	for off := uintptr(0); off < size; off += 8 {
		b = appendWord(b, unsafe.Add(p, off))
	}
	return b
}

// appendWord appends the 8 bytes at p, read as appendMemory reads them.
func appendWord(b []byte, p unsafe.Pointer) []byte {
	return binary.LittleEndian.AppendUint64(b, binary.LittleEndian.Uint64(unsafe.Slice((*byte)(p), 8)))
}

// appendString appends s's length, then its bytes.
func appendString(b []byte, s string) []byte {
	if len(s) < 0x80 { // the length in one byte, as AppendUvarint writes it
		b = append(b, byte(len(s)))
	} else {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	return append(b, s...)
}

// appendFieldOp appends op to ops, as a longer copy when it is memory
// right after the previous op's.
func appendFieldOp(ops []fieldOp, op fieldOp) []fieldOp {
	if n := len(ops); n > 0 && op.kind == opMemory {
		if last := &ops[n-1]; last.kind == opMemory && last.offset+last.size == op.offset {
			last.size += op.size
			return ops
		}
	}
	return append(ops, op)
}

// omission is how json decides to leave out a field of type t with the
// tag options opts: nil when it never does; byMethod when it asks the
// field's IsZero method (omitzero), which the walk leaves to json.
func omission(t reflect.Type, opts string) (omit func(unsafe.Pointer) bool, byMethod bool) {
	var empty, zero bool
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		empty = empty || o == "omitempty"
		zero = zero || o == "omitzero"
	}
	if zero && (t.Implements(isZeroerType) || reflect.PointerTo(t).Implements(isZeroerType)) {
		return nil, true
	}
	if !empty && !zero {
		return nil, false
	}
	return func(p unsafe.Pointer) bool {
		v := reflect.NewAt(t, p).Elem()
		return empty && isEmpty(v) || zero && v.IsZero()
	}, false
}

// isEmpty is omitempty's test: false, 0, a nil pointer or interface, an
// empty array, slice, map or string.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// Booleans and integers: their bytes, as they are in memory.

func walkFixed1(_ *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	return append(b, *(*uint8)(p)), true
}

func walkFixed2(_ *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	return binary.LittleEndian.AppendUint16(b, *(*uint16)(p)), true
}

func walkFixed4(_ *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	return binary.LittleEndian.AppendUint32(b, *(*uint32)(p)), true
}

func walkFixed8(_ *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	return binary.LittleEndian.AppendUint64(b, *(*uint64)(p)), true
}

// Floats: their bits. json writes the shortest text that reads back as the
// same float, so two floats write alike only when equal (and -0 apart from
// 0, as json does). NaN and the infinities json refuses.

func walkFloat64(_ *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	f := *(*float64)(p)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f)), true
}

func walkFloat32(_ *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	f := *(*float32)(p)
	if f64 := float64(f); math.IsNaN(f64) || math.IsInf(f64, 0) {
		return b, false
	}
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(f)), true
}

// Strings and bytes: their length, then their bytes.

func walkString(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	return w.flushIfFull(appendString(b, *(*string)(p))), true
}

func walkBytes(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
	v := *(*[]byte)(p)
	if b = nilMark(b, v == nil); v == nil {
		return b, true
	}
	b = binary.AppendUvarint(b, uint64(len(v)))
	return w.flushIfFull(append(b, v...)), true
}

// plainName reports whether name is made of letters, digits, '-', '_' and
// '.' only: a name json takes as the tag gives it. json takes more, and
// rejects some; for any other name the walk leaves the struct to json.
func plainName(name string) bool {
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_.", r) {
			return false
		}
	}
	return true
}

// walkJSON is the walk that adds the JSON json writes of a t, length
// first: of its address at an addressable place, as json would call a
// pointer method there, else of a copy.
func walkJSON(t reflect.Type, addr bool) walkFunc {
	return func(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
		v := reflect.NewAt(t, p)
		if !addr && t.Kind() != reflect.Interface {
			// Of an interface, the pointer: marshaled by itself, the
			// value would be its dynamic value, and json writes a nil
			// pointer there as null, where in a field of interface type
			// it calls the pointer's method.
			v = v.Elem()
		}
		j, err := json.Marshal(v.Interface())
		if err != nil {
			return b, false
		}
		b = binary.AppendUvarint(b, uint64(len(j)))
		return w.flushIfFull(append(b, j...)), true
	}
}

// walkPointer is the walk of a pointer: whether it is nil, then what it
// points to, one level deeper.
func walkPointer(elem *walkFunc) walkFunc {
	return func(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
		to := *(*unsafe.Pointer)(p)
		if b = nilMark(b, to == nil); to == nil {
			return b, true
		}
		if w.depth >= maxWalkDepth {
			return b, false
		}
		w.depth++
		b, ok := (*elem)(w, b, to)
		w.depth--
		return b, ok
	}
}

// walkSlice is the walk of a slice: whether it is nil, its length, then
// its elements (of size bytes each), one level deeper. Every slice has the
// layout of a []byte, whose length counts elements.
func walkSlice(elem *walkFunc, size uintptr) walkFunc {
	return func(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) {
		s := *(*[]byte)(p)
		if b = nilMark(b, s == nil); s == nil {
			return b, true
		}
		b = binary.AppendUvarint(b, uint64(len(s)))
		if w.depth >= maxWalkDepth {
			return b, false
		}
		w.depth++
		b, ok := w.elems(*elem, b, unsafe.Pointer(unsafe.SliceData(s)), size, len(s))
		w.depth--
		return b, ok
	}
}

// walkArray is the walk of an array of n elements of size bytes; json
// counts no depth for it (an array cannot hold itself but through a
// pointer or a slice).
func walkArray(elem *walkFunc, size uintptr, n int) walkFunc {
	return func(w *walker, b []byte, p unsafe.Pointer) ([]byte, bool) { return w.elems(*elem, b, p, size, n) }
}
