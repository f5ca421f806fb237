package adapter

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A digest tells two results of a live query apart without keeping them:
// 128 bits of seeded hashes of the result, or of the error's message.
//
// It only ever compares runs of one process, so it need not be stable
// across processes: hash/maphash with random seeds is several times faster
// than a cryptographic hash on the small results live queries return, and
// its seeds, unknown outside the process, keep anyone from choosing data
// whose digest collides with another's. Two seeds make a collision between
// two consecutive results a chance of 2^-128.
//
// What is hashed is not the result's JSON but a compact binary walk of the
// value (walkPlan, below), which costs a fraction of encoding it: no
// number formatting, no string escaping. The walk visits everything JSON
// encodes, and more, so two results whose JSON differs always have
// different digests; two whose JSON is the same have the same digest
// unless they differ in something JSON leaves out (an exported field
// shadowed by another of the same name), which costs a notification too
// many, never one too few. Whatever the walk cannot vouch for (a type with
// its own MarshalJSON or MarshalText, json.Number, a float that is NaN or
// infinite, a map whose keys are not strings, a channel, a function, a
// cycle) is encoded with encoding/json instead, so a result that json
// cannot encode is still the error it was.
type digest [2]uint64

// digests makes digests; one registry's share its seeds, its compiled walk
// plans and its walkers.
type digests struct {
	seed1, seed2 maphash.Seed
	plans        planCache
	walkers      sync.Pool // of *walker
}

func newDigests() *digests {
	ds := &digests{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	ds.walkers.New = func() any {
		w := &walker{buf: make([]byte, 0, 512)}
		w.enc = json.NewEncoder(w)
		return w
	}
	return ds
}

// planCache holds the walk plans compiled so far, one per type.
type planCache struct {
	plans sync.Map // reflect.Type -> *walkPlan
	mu    sync.Mutex
	last  atomic.Uint64
}

// ofResult is the digest of v, a command's result; an error when v does not
// encode as JSON.
func (ds *digests) ofResult(v any) (digest, error) {
	w := ds.walkers.Get().(*walker)
	defer ds.release(w)
	w.buf = w.buf[:0]
	if v == nil {
		w.buf = append(w.buf, 'N')
	} else {
		rv := reflect.ValueOf(v)
		p := ds.plans.planOf(rv.Type())
		w.buf = append(w.buf, 'W')
		w.u64(p.id)
		if !p.walk(w, rv) {
			w.buf = append(w.buf[:0], 'J')
			if err := w.json(v); err != nil {
				return digest{}, err
			}
		}
	}
	return digest{maphash.Bytes(ds.seed1, w.buf), maphash.Bytes(ds.seed2, w.buf)}, nil
}

// ofError is the digest of a failed run: the same failure, the same digest.
func (ds *digests) ofError(err error) digest {
	msg := err.Error()
	return digest{maphash.String(ds.seed1, "\x00error\x00"+msg), maphash.String(ds.seed2, "\x00error\x00"+msg)}
}

// walker is the buffer a walk appends to. Everything of variable size is
// prefixed with its length or a nil mark, and an interface's dynamic type
// with its plan's id, so that two different values of one type never append
// the same bytes.
type walker struct {
	buf   []byte
	depth int
	enc   *json.Encoder // writes into buf
}

// maxWalkBuffer is the largest buffer a walker keeps for its next use.
const maxWalkBuffer = 64 << 10

func (ds *digests) release(w *walker) {
	w.depth = 0
	if cap(w.buf) > maxWalkBuffer {
		w.buf = make([]byte, 0, 512)
	}
	ds.walkers.Put(w)
}

func (w *walker) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// u64 appends x. Appending to w.buf itself, rather than assigning it the
// result of a call, lets the compiler update only its length when it has
// room, without a write barrier while the garbage collector runs.
func (w *walker) u64(x uint64) {
	n := len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint64(w.buf[n:], x)
}

func (w *walker) str(s string) {
	w.u64(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// json appends v's JSON encoding, as json.Marshal encodes it, with its
// length.
func (w *walker) json(v any) error {
	at := len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0, 0, 0, 0, 0)
	if err := w.enc.Encode(v); err != nil {
		w.buf = w.buf[:at]
		return err
	}
	binary.LittleEndian.PutUint64(w.buf[at:], uint64(len(w.buf)-at-8))
	return nil
}

// maxWalkDepth bounds the nesting of pointers, slices, maps and interfaces
// a walk follows; deeper values (and cycles) are left to encoding/json,
// which tells a cycle from a deep value.
const maxWalkDepth = 1000

// walkPlan appends a value of one type to a walker. walk reports false
// when the value is beyond the walk (see digest); ofResult then encodes
// the whole result as JSON instead.
type walkPlan struct {
	id   uint64
	walk func(w *walker, v reflect.Value) bool
}

var (
	marshaler = reflect.TypeFor[json.Marshaler]()
	texter    = reflect.TypeFor[encoding.TextMarshaler]()
	timeType  = reflect.TypeFor[time.Time]()
	numType   = reflect.TypeFor[json.Number]()
)

// planOf returns the plan of t, compiling it (and the plans it uses) the
// first time. Plans are published together once complete, so that a
// recursive type's plan is never seen half made.
func (pc *planCache) planOf(t reflect.Type) *walkPlan {
	if p, ok := pc.plans.Load(t); ok {
		return p.(*walkPlan)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	made := make(map[reflect.Type]*walkPlan)
	p := pc.compilePlan(t, made)
	for t, p := range made {
		pc.plans.Store(t, p)
	}
	return p
}

func (pc *planCache) compilePlan(t reflect.Type, made map[reflect.Type]*walkPlan) *walkPlan {
	if p, ok := pc.plans.Load(t); ok {
		return p.(*walkPlan)
	}
	if p := made[t]; p != nil {
		return p // recursive: its walk is set before anyone runs it
	}
	p := &walkPlan{id: pc.last.Add(1)}
	made[t] = p
	p.walk = pc.compileWalk(t, made)
	return p
}

// encodesItself reports whether json encodes a value of t (value) or an
// addressable one (addr) with a method of its own.
func encodesItself(t reflect.Type) (value, addr bool) {
	value = t.Implements(marshaler) || t.Implements(texter)
	if !value && t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		addr = pt.Implements(marshaler) || pt.Implements(texter)
	}
	return value, addr
}

func (pc *planCache) compileWalk(t reflect.Type, made map[reflect.Type]*walkPlan) func(*walker, reflect.Value) bool {
	switch t {
	case timeType:
		return walkTime
	case numType:
		return walkJSON
	}
	value, addr := encodesItself(t)
	if value {
		return walkJSON
	}
	plain := pc.compileKind(t, made)
	if addr {
		// json uses the pointer's method only when it can take the address.
		return func(w *walker, v reflect.Value) bool {
			if v.CanAddr() {
				if !v.Addr().CanInterface() {
					return false
				}
				return w.json(v.Addr().Interface()) == nil
			}
			return plain(w, v)
		}
	}
	return plain
}

func (pc *planCache) compileKind(t reflect.Type, made map[reflect.Type]*walkPlan) func(*walker, reflect.Value) bool {
	switch t.Kind() {
	case reflect.Bool:
		return func(w *walker, v reflect.Value) bool {
			w.buf = append(w.buf, boolByte(v.Bool()))
			return true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(w *walker, v reflect.Value) bool {
			w.u64(uint64(v.Int()))
			return true
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(w *walker, v reflect.Value) bool {
			w.u64(v.Uint())
			return true
		}
	case reflect.Float32, reflect.Float64:
		return func(w *walker, v reflect.Value) bool {
			f := v.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return false // json refuses it: let it say so
			}
			w.u64(math.Float64bits(f))
			return true
		}
	case reflect.String:
		return func(w *walker, v reflect.Value) bool {
			w.str(v.String())
			return true
		}
	case reflect.Pointer:
		elem := pc.compilePlan(t.Elem(), made)
		return func(w *walker, v reflect.Value) bool {
			if v.IsNil() {
				w.buf = append(w.buf, 0)
				return true
			}
			w.buf = append(w.buf, 1)
			return w.nest(elem, v.Elem())
		}
	case reflect.Interface:
		return func(w *walker, v reflect.Value) bool {
			if v.IsNil() {
				w.buf = append(w.buf, 0)
				return true
			}
			e := v.Elem()
			p := pc.planOf(e.Type())
			w.buf = append(w.buf, 1)
			w.u64(p.id)
			return w.nest(p, e)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if value, addr := encodesItself(t.Elem()); !value && !addr {
				// json encodes it as base64 of the bytes.
				return func(w *walker, v reflect.Value) bool {
					if v.IsNil() {
						w.buf = append(w.buf, 0)
						return true
					}
					b := v.Bytes()
					w.buf = append(w.buf, 1)
					w.u64(uint64(len(b)))
					w.buf = append(w.buf, b...)
					return true
				}
			}
		}
		elem := pc.compilePlan(t.Elem(), made)
		return func(w *walker, v reflect.Value) bool {
			if v.IsNil() {
				w.buf = append(w.buf, 0)
				return true
			}
			n := v.Len()
			w.buf = append(w.buf, 1)
			w.u64(uint64(n))
			w.depth++
			defer func() { w.depth-- }()
			if w.depth > maxWalkDepth {
				return false
			}
			for i := range n {
				if !elem.walk(w, v.Index(i)) {
					return false
				}
			}
			return true
		}
	case reflect.Array:
		elem := pc.compilePlan(t.Elem(), made)
		n := t.Len()
		return func(w *walker, v reflect.Value) bool {
			for i := range n {
				if !elem.walk(w, v.Index(i)) {
					return false
				}
			}
			return true
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return walkJSON
		}
		elem := pc.compilePlan(t.Elem(), made)
		return func(w *walker, v reflect.Value) bool {
			if v.IsNil() {
				w.buf = append(w.buf, 0)
				return true
			}
			w.depth++
			defer func() { w.depth-- }()
			if w.depth > maxWalkDepth {
				return false
			}
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			w.buf = append(w.buf, 1)
			w.u64(uint64(len(keys)))
			for _, k := range keys {
				w.str(k.String())
				if !elem.walk(w, v.MapIndex(k)) {
					return false
				}
			}
			return true
		}
	case reflect.Struct:
		type field struct {
			index int
			plan  *walkPlan
			leaf  reflect.Kind // a kind walked in line, or Invalid
		}
		var fields []field
		for i := range t.NumField() {
			sf := t.Field(i)
			// The fields json may encode, as encoding/json chooses them:
			// exported ones, and embedded structs, whose exported fields
			// are promoted even when the struct type is not exported.
			if sf.Anonymous {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if !sf.IsExported() && ft.Kind() != reflect.Struct {
					continue
				}
			} else if !sf.IsExported() {
				continue
			}
			if sf.Tag.Get("json") == "-" {
				continue
			}
			f := field{index: i, plan: pc.compilePlan(sf.Type, made)}
			if value, addr := encodesItself(sf.Type); !value && !addr && sf.Type != timeType && sf.Type != numType {
				switch k := sf.Type.Kind(); k {
				case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
					reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
					reflect.String, reflect.Bool:
					f.leaf = k
				}
			}
			fields = append(fields, f)
		}
		return func(w *walker, v reflect.Value) bool {
			// The common scalar fields are walked here, as their plans
			// would, without a call each: results are mostly rows of them.
			for _, f := range fields {
				fv := v.Field(f.index)
				switch f.leaf {
				case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
					w.u64(uint64(fv.Int()))
				case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
					w.u64(fv.Uint())
				case reflect.String:
					w.str(fv.String())
				case reflect.Bool:
					w.buf = append(w.buf, boolByte(fv.Bool()))
				default:
					if !f.plan.walk(w, fv) {
						return false
					}
				}
			}
			return true
		}
	}
	// Channels, functions, complex numbers, unsafe pointers: json refuses
	// them, and says so.
	return func(*walker, reflect.Value) bool { return false }
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// nest walks v with p one level deeper.
func (w *walker) nest(p *walkPlan, v reflect.Value) bool {
	w.depth++
	ok := w.depth <= maxWalkDepth && p.walk(w, v)
	w.depth--
	return ok
}

// walkJSON appends the JSON encoding of a value json encodes with a method
// of its own, or specially.
func walkJSON(w *walker, v reflect.Value) bool {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		w.buf = append(w.buf, 0)
		return true
	}
	if !v.CanInterface() {
		return false
	}
	w.buf = append(w.buf, 1)
	return w.json(v.Interface()) == nil
}

// walkTime appends a time.Time as its MarshalJSON would write it, without
// the allocation; a time MarshalJSON refuses is left to it.
func walkTime(w *walker, v reflect.Value) bool {
	var t time.Time
	switch {
	case v.CanAddr() && v.Addr().CanInterface():
		t = *v.Addr().Interface().(*time.Time)
	case v.CanInterface():
		t = v.Interface().(time.Time)
	default:
		return false
	}
	at := len(w.buf)
	w.buf = append(w.buf, 0)
	b, err := t.AppendText(w.buf)
	if err != nil {
		w.buf = w.buf[:at]
		return false
	}
	b[at] = byte(len(b) - at - 1) // RFC 3339 text: at most 35 bytes
	w.buf = b
	return true
}
