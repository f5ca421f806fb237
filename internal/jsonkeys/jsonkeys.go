// Package jsonkeys finds the keys that a JSON text's objects give twice.
//
// A JSON object may carry a key twice; encoding/json keeps the last value
// and says nothing. A request with {"id":1,"id":2} would then run with 2
// where a client (or a proxy that checked the first) meant 1. The
// scanners here find such keys in valid JSON, at any depth, as json reads
// them (escapes undone), and optionally the keys that differ only in case,
// which encoding/json matches to one struct field.
package jsonkeys

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Duplicate finds the first key that an object in data, a valid JSON
// text, gives twice. at is the path to that object, as the keys and
// indexes that lead to it from the top; key is the key as json reads it
// (escapes undone: "\u0061" and "a" are one key).
func Duplicate(data []byte) (at []string, key string, found bool) {
	return Repeated(data, nil)
}

// Repeated is Duplicate, but in the objects at the paths folded
// lists (as the keys and indexes from the top, [] for the top object) keys
// that differ only in case count as the same key. encoding/json matches a
// struct's field by its key whatever the case and keeps the last match, so
// {"name":"a","Name":"b"} decoded into a struct is "b", where a parser that
// reads keys by case sees "a".
func Repeated(data []byte, folded [][]string) (at []string, key string, found bool) {
	var stack []keyFrame
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			name := ""
			if n := len(stack); n > 0 {
				name = stack[n-1].childName()
			}
			f := keyFrame{object: c == '{', expectKey: c == '{', name: name}
			f.fold = f.object && atFolded(stack, name, folded)
			stack = append(stack, f)
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			top := &stack[len(stack)-1]
			if top.object {
				top.expectKey = true
			} else {
				top.index++
			}
		case '"':
			end, escaped := stringEnd(data, i)
			if n := len(stack); n > 0 && stack[n-1].expectKey {
				top := &stack[n-1]
				k := unquoteKey(data[i:end], escaped)
				same := k
				if top.fold {
					same = foldKey(k)
				}
				if top.has(same) {
					for _, f := range stack[1:] {
						at = append(at, f.name)
					}
					return at, k, true
				}
				top.add(same)
				top.last, top.expectKey = k, false
			}
			i = end - 1
		}
	}
	return nil, "", false
}

// atFolded reports whether the object that starts now, under name in the
// innermost of stack, is at one of the paths folded.
func atFolded(stack []keyFrame, name string, folded [][]string) bool {
	depth := len(stack) // the length of the new object's path
	for _, path := range folded {
		if len(path) != depth || depth > 0 && path[depth-1] != name {
			continue
		}
		match := true
		for j := 1; j < depth; j++ { // stack[0] is the top, without a name
			if stack[j].name != path[j-1] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// foldKey spells k so that keys equal under Unicode case folding, as
// encoding/json compares them, are spelled alike: each rune becomes the
// least of the runes it folds to.
func foldKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// keyFrame is an object or array duplicateKey is inside.
type keyFrame struct {
	object    bool
	fold      bool   // object: keys that differ only in case are the same
	expectKey bool   // object: the next string is a key
	name      string // the key or index it sits under in its parent
	last      string // object: the key read last
	index     int    // array: the element's index
	keys      []string
	set       map[string]bool // keys, once there are many
}

// childName is the name of a value that starts now inside f.
func (f *keyFrame) childName() string {
	if f.object {
		return f.last
	}
	return strconv.Itoa(f.index)
}

// frameKeysInline is how many keys a frame compares one by one before it
// keeps them in a map: most objects are small, and a map per object would
// cost more than the call's decoding.
const frameKeysInline = 16

func (f *keyFrame) has(k string) bool {
	if f.set != nil {
		return f.set[k]
	}
	for _, have := range f.keys {
		if have == k {
			return true
		}
	}
	return false
}

func (f *keyFrame) add(k string) {
	if f.set == nil && len(f.keys) < frameKeysInline {
		f.keys = append(f.keys, k)
		return
	}
	if f.set == nil {
		f.set = make(map[string]bool, 2*frameKeysInline)
		for _, have := range f.keys {
			f.set[have] = true
		}
		f.keys = nil
	}
	f.set[k] = true
}

// stringEnd is the index just past the closing quote of the string that
// opens at data[start], and whether the string holds an escape.
func stringEnd(data []byte, start int) (end int, escaped bool) {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			escaped = true
			i++ // the escaped byte cannot close the string
		case '"':
			return i + 1, escaped
		}
	}
	return len(data), escaped // not valid JSON: not reached
}

// unquoteKey is the key the quoted string q stands for, as json reads it:
// escapes undone, and invalid UTF-8 made U+FFFD (so "\xff" and "\xfe" are
// one key to json, and its map keeps one of them).
func unquoteKey(q []byte, escaped bool) string {
	if !escaped && utf8.Valid(q) {
		return string(q[1 : len(q)-1])
	}
	var k string
	if err := json.Unmarshal(q, &k); err != nil {
		return string(q) // not valid JSON: not reached
	}
	return k
}
