package digest

import (
	"crypto/sha256"
	"encoding/binary"
)

// Content is the digest of b, the bytes a client is answered, that every
// process computes alike: the first 128 bits of b's SHA-256. It names a
// result across the instances of a fleet and across restarts, where a
// Hasher's digests, seeded per process, cannot. Whoever chooses the data
// finds two answers with one name only by a collision of truncated
// SHA-256, some 2^64 tries, for a name only ever compared with those of
// earlier answers to the same URI.
func Content(b []byte) Digest {
	sum := sha256.Sum256(b)
	return Digest{binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])}
}

// ContentOfError is Content for a failed run: the same message, the same
// digest in every process. The prefix keeps it apart from any result,
// whose JSON never starts with a zero byte.
func ContentOfError(err error) Digest {
	h := sha256.New()
	h.Write([]byte("\x00error\x00"))
	h.Write([]byte(err.Error()))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return Digest{binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])}
}
