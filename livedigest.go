package adapter

import (
	"encoding/json"
	"hash/maphash"
	"sync"
)

// A digest tells two results of a live query apart without keeping them:
// 128 bits of seeded hashes of the result's JSON, or of the error's message.
//
// It only ever compares runs of one process, so it need not be stable
// across processes: hash/maphash with random seeds is several times faster
// than a cryptographic hash on the small results live queries return, and
// its seeds, unknown outside the process, keep anyone from choosing data
// whose digest collides with another's. Two seeds make a collision between
// two consecutive results a chance of 2^-128.
type digest [2]uint64

// digester hashes what it is written with both seeds. It encodes JSON
// straight into the hashes, without the copy json.Marshal makes.
type digester struct {
	h1, h2 maphash.Hash
	enc    *json.Encoder
}

func (d *digester) Write(p []byte) (int, error) {
	d.h1.Write(p)
	d.h2.Write(p)
	return len(p), nil
}

// digests makes digesters; one registry's share its seeds.
type digests struct {
	seed1, seed2 maphash.Seed
	pool         sync.Pool
}

func newDigests() *digests {
	ds := &digests{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	ds.pool.New = func() any {
		d := &digester{}
		d.h1.SetSeed(ds.seed1)
		d.h2.SetSeed(ds.seed2)
		d.enc = json.NewEncoder(d)
		return d
	}
	return ds
}

// ofResult is the digest of v's JSON encoding, as json.Marshal (and so
// marshalResult) encodes it; an error when v does not encode.
func (ds *digests) ofResult(v any) (digest, error) {
	d := ds.pool.Get().(*digester)
	defer ds.pool.Put(d)
	d.h1.Reset()
	d.h2.Reset()
	if err := d.enc.Encode(v); err != nil {
		return digest{}, err
	}
	return digest{d.h1.Sum64(), d.h2.Sum64()}, nil
}

// ofError is the digest of a failed run: the same failure, the same digest.
func (ds *digests) ofError(err error) digest {
	msg := err.Error()
	return digest{maphash.String(ds.seed1, "\x00error\x00"+msg), maphash.String(ds.seed2, "\x00error\x00"+msg)}
}
