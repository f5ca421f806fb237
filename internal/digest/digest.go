package digest

import (
	"encoding/json"
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"
)

// A Digest tells two results of a query apart without keeping them:
// 128 bits of seeded hashes of what the result shows a client, or of the
// error's message. A re-run whose digest differs from the last one's is a
// change.
//
// The rule is exact: the same JSON, the same digest; different JSON,
// different digests, but for a collision. A result json cannot encode is
// json's error, word for word. A result of its command's own type is
// hashed by the walk of that type (walk.go), which reads the
// values json would write instead of producing the JSON; anything else,
// and a command whose result type is an interface, by its JSON, which a
// json.Encoder streams straight into the hashes.
//
// The hashes are two hash/maphash hashes, each with a random seed of the
// Hasher's own. Two 64-bit hashes under independent seeds make a
// collision between two results a chance of about 2^-128; maphash is meant
// to resist collisions even when an adversary chooses the bytes, and its
// seeds never leave the process. A digest is only ever compared within one
// process, so it need not be stable across processes. SHA-256 would serve
// too: about as cheap on a CPU with SHA instructions, but without them it
// nearly doubles the digest (docs/performance.md, "The result digest").
type Digest [2]uint64

// Hasher makes digests under seeds of its own.
type Hasher struct {
	seeds [2]maphash.Seed
	// walkers are the scratch of the walks under way, kept for the next.
	walkers sync.Pool
}

// NewHasher makes a Hasher with seeds of its own.
func NewHasher() *Hasher {
	ds := &Hasher{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	ds.walkers.New = func() any { return new(walker) }
	return ds
}

// Of is the digest of v, a command's result: by rw, the walk of the
// command's result type (walk.go), when v is of that type and
// the walk does not give up; else of v's JSON, or json's error when v does
// not encode.
func (ds *Hasher) Of(v any, rw *Walk) (Digest, error) {
	if rw != nil && reflect.TypeOf(v) == rw.typ {
		if d, ok := ds.walk(v, rw); ok {
			return d, nil
		}
	}
	return ds.OfJSON(v)
}

// OfJSON is the digest of v's JSON; json's error when v does not encode.
func (ds *Hasher) OfJSON(v any) (Digest, error) {
	h := ds.hashes()
	if err := json.NewEncoder(h).Encode(v); err != nil {
		return Digest{}, err
	}
	return h.sum(), nil
}

// At is Of for the result *p, p a *R of rw's type R, read
// in place: a slot of rw (Walk.Slot). The digest is the one
// ofResult gives the value *p.
func (ds *Hasher) At(p any, rw *Walk) (Digest, error) {
	at := reflect.ValueOf(p)
	if d, ok := ds.walkAt(at.UnsafePointer(), rw); ok {
		return d, nil
	}
	return ds.OfJSON(at.Elem().Interface())
}

// walk is the digest of v by rw; false when the walk gave up. The walk's
// bytes begin with a byte no JSON text begins with, so that no walk's
// digest is the digest of a JSON text or of an error.
func (ds *Hasher) walk(v any, rw *Walk) (Digest, bool) {
	w := ds.walkers.Get().(*walker)
	defer ds.putWalker(w)
	w.seeds, w.flushed, w.depth = &ds.seeds, false, 0
	b, ok := rw.run(w, append(w.buf[:0], 1), v)
	return ds.sum(w, b, ok)
}

// walkAt is walk for the value of rw's type at p.
func (ds *Hasher) walkAt(p unsafe.Pointer, rw *Walk) (Digest, bool) {
	w := ds.walkers.Get().(*walker)
	defer ds.putWalker(w)
	w.seeds, w.flushed, w.depth = &ds.seeds, false, 0
	b, ok := rw.walk(w, append(w.buf[:0], 1), p)
	return ds.sum(w, b, ok)
}

// sum is the digest of a walk that ended with b in w's buffer; false when
// it gave up.
func (ds *Hasher) sum(w *walker, b []byte, ok bool) (Digest, bool) {
	if !ok {
		return Digest{}, false
	}
	w.buf = b
	if !w.flushed {
		// All in one buffer, the common case: maphash.Bytes is what
		// Hash.Write and Sum64 would give, in one pass rather than one
		// for every 128 bytes.
		return Digest{maphash.Bytes(ds.seeds[0], b), maphash.Bytes(ds.seeds[1], b)}, true
	}
	w.h.Write(b)
	return w.h.sum(), true
}

func (ds *Hasher) putWalker(w *walker) {
	if cap(w.buf) > 4*walkFlush {
		w.buf = nil // one huge string: let it go
	}
	ds.walkers.Put(w)
}

// walker is the scratch of one walk: where its bytes go before they are
// hashed (buf, between walks), the hashes, and the depth of pointers and
// slices it is in.
type walker struct {
	buf []byte
	h   hashPair
	// seeds are the Hasher's; flushed, that h has been seeded and
	// written to.
	seeds   *[2]maphash.Seed
	flushed bool
	depth   int
}

// walkFlush is how many bytes a walker holds before it hashes them.
const walkFlush = 8 << 10

// flushIfFull hashes b, and returns it empty, once it holds walkFlush
// bytes. It is called for every string and element, so its test is kept
// small enough to be inlined.
func (w *walker) flushIfFull(b []byte) []byte {
	if len(b) < walkFlush {
		return b
	}
	return w.flush(b)
}

// flush hashes b and returns it empty.
func (w *walker) flush(b []byte) []byte {
	if !w.flushed {
		for i := range w.h {
			w.h[i].SetSeed(w.seeds[i])
		}
		w.flushed = true
	}
	w.h.Write(b)
	return b[:0]
}

// nilMark appends whether a pointer or slice is nil (json writes null), or
// a field left out.
func nilMark(b []byte, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return append(b, 1)
}

// elems walks the n elements of size bytes from p, of a slice or an
// array.
func (w *walker) elems(elem walkFunc, b []byte, p unsafe.Pointer, size uintptr, n int) ([]byte, bool) {
	ok := true
	for i := range n {
		if b, ok = elem(w, b, unsafe.Add(p, uintptr(i)*size)); !ok {
			break
		}
		b = w.flushIfFull(b)
	}
	return b, ok
}

// OfError is the digest of a failed run: the same failure, the same
// digest. The prefix keeps it apart from any result, whose JSON never
// starts with a zero byte.
func (ds *Hasher) OfError(err error) Digest {
	msg := err.Error()
	h := ds.hashes()
	for i := range h {
		h[i].WriteString("\x00error\x00")
		h[i].WriteString(msg)
	}
	return h.sum()
}

// hashPair hashes what is written to it under both seeds.
type hashPair [2]maphash.Hash

func (ds *Hasher) hashes() *hashPair {
	h := new(hashPair)
	for i := range h {
		h[i].SetSeed(ds.seeds[i])
	}
	return h
}

func (h *hashPair) Write(p []byte) (int, error) {
	for i := range h {
		h[i].Write(p) // never fails
	}
	return len(p), nil
}

func (h *hashPair) sum() Digest { return Digest{h[0].Sum64(), h[1].Sum64()} }
