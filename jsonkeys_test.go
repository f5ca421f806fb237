package adapter

import (
	"strings"
	"testing"
)

func TestDuplicateKeyErrorNamesTheArgument(t *testing.T) {
	long := strings.Repeat("é", 100)
	for _, tc := range []struct {
		at   []string
		key  string
		want string
	}{
		{nil, "id", `id: is given twice; a JSON object's keys must differ`},
		{[]string{"labels"}, "a", `labels: has the key "a" twice; a JSON object's keys must differ`},
		{[]string{"rows", "2", "tags"}, "x", `rows: item 2/tags has the key "x" twice; a JSON object's keys must differ`},
		{nil, long, strings.Repeat("é", 32) + `…: is given twice; a JSON object's keys must differ`},
		{[]string{long}, long, strings.Repeat("é", 32) + `…: has the key "` + strings.Repeat("é", 32) + `"… twice; a JSON object's keys must differ`},
	} {
		if got := duplicateKeyError(tc.at, tc.key).Errors[0].Error(); got != tc.want {
			t.Errorf("duplicateKeyError(%.20q, %.20q) = %s\nwant %s", tc.at, tc.key, got, tc.want)
		}
	}
}

// FuzzDuplicateKey holds duplicateKey to encoding/json's own tokens: on
// any valid JSON text, it finds a key given twice exactly when the tokens
// show one, and the same key.
// The path to a repeated key comes from the client, as deep as json
// nests: the message stays short however deep it is, naming the argument,
// the first and last steps, and the key.
func TestDuplicateKeyErrorIsBounded(t *testing.T) {
	step := strings.Repeat("s", 200)
	at := []string{"filter"}
	for range 9000 {
		at = append(at, step)
	}
	at = append(at, "last")
	msg := duplicateKeyError(at, "k").Errors[0].Error()
	if len(msg) > 1024 {
		t.Errorf("message of %d bytes, want at most 1 KiB: %.200s…", len(msg), msg)
	}
	for _, want := range []string{"filter: item " + step[:64] + "…/", "/last has the key \"k\" twice"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %.300s… does not say %q", msg, want)
		}
	}
}
