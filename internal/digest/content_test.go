package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

// TestContentIsTheSameEverywhere: a content digest depends on the bytes
// alone, not on a Hasher's seeds, so that two processes name one result
// alike; it is the first half of the bytes' SHA-256, which anyone can
// check.
func TestContentIsTheSameEverywhere(t *testing.T) {
	for _, b := range []string{"", `{"id":12,"name":"Ada Lovelace"}`, "[]", "null"} {
		got := Content([]byte(b))
		sum := sha256.Sum256([]byte(b))
		var want Digest
		for i := range 8 {
			want[0] = want[0]<<8 | uint64(sum[i])
			want[1] = want[1]<<8 | uint64(sum[8+i])
		}
		if got != want {
			t.Errorf("Content(%q) = %x, want the first 128 bits of its SHA-256 %s", b, got, hex.EncodeToString(sum[:16]))
		}
		if other := Content([]byte(b)); other != got {
			t.Errorf("Content(%q) twice: %x then %x", b, got, other)
		}
	}
	if Content([]byte("[1]")) == Content([]byte("[2]")) {
		t.Error("two results, one content digest")
	}
}

// TestContentOfErrorIsApart: a failure's content digest depends on its
// message alone, and is never that of a result.
func TestContentOfErrorIsApart(t *testing.T) {
	a, b := ContentOfError(errors.New("customer 99 not found")), ContentOfError(errors.New("customer 99 not found"))
	if a != b {
		t.Errorf("one message, two digests: %x, %x", a, b)
	}
	if a == ContentOfError(errors.New("customer 98 not found")) {
		t.Error("two messages, one digest")
	}
	if a == Content([]byte("customer 99 not found")) || a == Content([]byte(`"customer 99 not found"`)) {
		t.Error("a failure's digest equals a result's")
	}
}
