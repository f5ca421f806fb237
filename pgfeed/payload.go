package pgfeed

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxPayload keeps a notification under PostgreSQL's 8000-byte NOTIFY
// payload limit with some room to spare. The triggers use the same number.
const maxPayload = 7900

// payload is what travels in a notification:
//
//	{"i":"<instance id>","k":["customers/12"]}
//
// "i" lets a feed skip what it published itself; the triggers send "sql".
type payload struct {
	Instance string   `json:"i"`
	Keys     []string `json:"k"`
}

// encodePayloads turns keys into as few notifications as fit in limit bytes
// each. Precise keys go in one payload when they fit. Otherwise they are
// widened to their tables ("customers/12" becomes "customers"), which
// re-runs more queries but misses none; and if even the tables do not fit,
// they are spread over several payloads.
//
// JSON strings are UTF-8: a key that is not would arrive with its bad bytes
// turned into U+FFFD, a key no query read. So it goes as its table, and
// when the table is not UTF-8 either, as the empty payload, which makes
// every instance (this one too) re-run everything. A table key too long for
// any notification goes as the empty payload too: failing the publish
// would leave the other instances without the change.
func encodePayloads(instance string, keys []string, limit int) []string {
	keys = dedupe(keys) // a copy: the caller's keys stay as they are
	widened := false
	for i, k := range keys {
		if !utf8.ValidString(k) {
			if keys[i] = wider(k); !utf8.ValidString(keys[i]) {
				return []string{""}
			}
			widened = true
		}
	}
	if widened {
		keys = dedupe(keys)
	}
	if p := marshal(instance, keys); len(p) <= limit {
		return []string{p}
	}
	tables := make([]string, len(keys))
	for i, k := range keys {
		tables[i] = wider(k)
	}
	tables = dedupe(tables)
	if p := marshal(instance, tables); len(p) <= limit {
		return []string{p}
	}
	return split(instance, tables, limit)
}

// split packs keys greedily into payloads of at most limit bytes: the
// empty payload, everything, when a key does not fit in one by itself.
func split(instance string, keys []string, limit int) []string {
	base := len(marshal(instance, []string{})) // {"i":"…","k":[]}
	var out []string
	var chunk []string
	size := base
	for _, k := range keys {
		quoted, _ := json.Marshal(k) // a string always marshals
		n := len(quoted)
		if base+n > limit {
			return []string{""}
		}
		if len(chunk) > 0 {
			n++ // the comma
		}
		if size+n > limit {
			out = append(out, marshal(instance, chunk))
			chunk, size = nil, base
			n-- // no comma before the first key
		}
		chunk = append(chunk, k)
		size += n
	}
	if len(chunk) > 0 {
		out = append(out, marshal(instance, chunk))
	}
	return out
}

func marshal(instance string, keys []string) string {
	b, err := json.Marshal(payload{Instance: instance, Keys: keys})
	if err != nil {
		panic(err) // a struct of strings always marshals
	}
	return string(b)
}

// decodePayload reads a notification. An empty payload (a bare
// "NOTIFY mcplive_changes" from psql) means "anything may have changed",
// reported as all == true, as is a payload that is not ours to read: what
// it meant cannot be known, and re-running too much is safe where missing a
// change is not.
func decodePayload(s string) (p payload, all bool, err error) {
	if strings.TrimSpace(s) == "" {
		return payload{}, true, nil
	}
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return payload{}, true, fmt.Errorf("undecodable notification %.80q: %w", s, err)
	}
	if p.Keys == nil {
		// null, {}, another program's object, "k": null: JSON, but no
		// list of keys to read.
		return payload{}, true, fmt.Errorf("notification %.80q has no list of keys (\"k\")", s)
	}
	return p, false, nil
}

// wider returns the key a widened key list carries for key: its table,
// "customers" for "customers/12". A key with an empty table ("/12") is
// carried as itself: the empty key would reach nothing, since the adapter
// ignores it.
func wider(key string) string {
	if table, _, _ := strings.Cut(key, "/"); table != "" {
		return table
	}
	return key
}

// dedupe drops repeated keys, keeping the first occurrence's order.
func dedupe(keys []string) []string {
	seen := make(map[string]struct{}, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}
