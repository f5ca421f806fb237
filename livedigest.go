package adapter

import (
	"encoding/json"
	"hash/maphash"
)

// A digest tells two results of a live query apart without keeping them:
// 128 bits of seeded hashes of the result's JSON, or of the error's
// message. A re-run whose digest differs from the last one's is a change.
//
// The digest is of the JSON itself, as encoding/json writes it (and as the
// client would read the result), so the rule is exact: the same JSON, the
// same digest; different JSON, different digests, but for a collision. A
// result json cannot encode is json's error, word for word.
//
// The JSON is streamed by a json.Encoder straight into two hash/maphash
// hashes, each with a random seed of the registry's own. Two 64-bit hashes
// under independent seeds make a collision between two results a chance
// of about 2^-128; maphash is meant to resist collisions even when an
// adversary chooses the bytes, and its seeds never leave the process. A
// digest is only ever compared within one process, so it need not be
// stable across processes. SHA-256 would serve too: about as cheap on a
// CPU with SHA instructions, but without them it nearly doubles the digest.
//
// Why not something faster: on the example's SQLite store the command of a
// re-run costs ten to thirty times its digest, and a walk of the Go value
// that skipped the JSON saved 2 to 7% of a re-run, for 480 lines that had
// to mirror encoding/json's rules (docs/performance.md, "The result
// digest").
type digest [2]uint64

// digests makes the digests of one registry, under its seeds.
type digests struct {
	seeds [2]maphash.Seed
}

func newDigests() *digests {
	return &digests{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

// ofResult is the digest of v's JSON, a command's result; json's error when
// v does not encode.
func (ds *digests) ofResult(v any) (digest, error) {
	h := ds.hashes()
	if err := json.NewEncoder(h).Encode(v); err != nil {
		return digest{}, err
	}
	return h.sum(), nil
}

// ofError is the digest of a failed run: the same failure, the same
// digest. The prefix keeps it apart from any result, whose JSON never
// starts with a zero byte.
func (ds *digests) ofError(err error) digest {
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

func (ds *digests) hashes() *hashPair {
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

func (h *hashPair) sum() digest { return digest{h[0].Sum64(), h[1].Sum64()} }
