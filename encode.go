package adapter

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
)

// A command's result is written as encoding/json writes it, but for one
// thing: a nil slice is written as [] and a nil map as {} (a nil []byte as
// ""), as an empty one is. Go code returns nil for "none" as often as an
// empty slice, and an agent should not have to tell the two apart; so the
// output schema says "array" or "object" where encoding/json alone would
// need "array or null", a union of types that several model providers'
// schema dialects refuse. A nil pointer, and a nil value of an interface
// type or of a type that encodes itself, is written null as before.
//
// encoding/json has no option for it, so the bytes it wrote are walked
// with the result's Go type beside them, and each null written for a
// slice or a map is replaced. A result whose JSON holds no null, or whose
// type holds no slice or map outside an interface, is not walked.

// marshalEmptyNils is json.Marshal(v), with nil slices and maps written empty.
func marshalEmptyNils(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || v == nil || !bytes.Contains(b, []byte("null")) {
		return b, err
	}
	p := planOf(reflect.TypeOf(v))
	if p == nil {
		return b, nil
	}
	f := nilFiller{in: b}
	f.value(p)
	if f.done == 0 {
		return b, nil
	}
	return append(f.out, b[f.done:]...), nil
}

// A fillPlan says how to walk the JSON of a value of one type: nil for a
// type whose JSON holds no null to replace, wherever the walk would go.
type fillPlan struct {
	null   string               // what a null of this type is written as: "[]", "{}", `""`, or "" to keep it
	fields map[string]*fillPlan // a struct's members worth walking, by JSON name
	elem   *fillPlan            // a slice's, an array's or a map's values; a pointer's target
	kind   reflect.Kind
}

// plans are the fill plans of the result types met so far, shared by
// every adapter of the process: a plan depends on the type alone.
var plans sync.Map // reflect.Type -> *fillPlan

func planOf(t reflect.Type) *fillPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*fillPlan)
	}
	p := (&planner{building: map[reflect.Type]*fillPlan{}}).plan(t)
	plans.Store(t, p)
	return p
}

type planner struct {
	building map[reflect.Type]*fillPlan // plans made or being made by this call, for recursive types
}

func (pl *planner) plan(t reflect.Type) *fillPlan {
	if p, ok := pl.building[t]; ok {
		return p
	}
	if writesItself(t) {
		return nil
	}
	p := &fillPlan{kind: t.Kind()}
	pl.building[t] = p
	switch t.Kind() {
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Uint8 && !writesItself(reflect.PointerTo(e)) {
			p.null = `""` // a []byte: base64, and empty is ""
			return p
		}
		p.null, p.elem = "[]", pl.plan(t.Elem())
	case reflect.Map:
		p.null, p.elem = "{}", pl.plan(t.Elem())
	case reflect.Pointer, reflect.Array:
		p.elem = pl.plan(t.Elem())
	case reflect.Struct:
		for _, f := range goFields(t) {
			if f.quoted {
				continue // written as a string
			}
			if fp := pl.plan(f.typ); fp != nil {
				if p.fields == nil {
					p.fields = map[string]*fillPlan{}
				}
				p.fields[f.name] = fp
			}
		}
	}
	if p.null == "" && p.elem == nil && p.fields == nil {
		// Nothing to fill below it. (A recursive type reaches itself
		// through a field, so its plan has one and is kept.)
		pl.building[t] = nil
		return nil
	}
	return p
}

// writesItself reports whether encoding/json writes a value of t, or may
// (where it can take its address), with a method of t's.
func writesItself(t reflect.Type) bool {
	value, addr := encodesItself(t)
	return value || addr
}

// nilFiller walks JSON that encoding/json wrote (compact, valid), copying
// it to out with the replacements made.
type nilFiller struct {
	in   []byte
	pos  int    // the next byte of in to read
	out  []byte // in[:done] with its replacements
	done int
}

// value reads the value at pos, written for a value of plan p (nil: of a
// type the walk does not follow).
func (f *nilFiller) value(p *fillPlan) {
	if p == nil {
		f.skip()
		return
	}
	if f.in[f.pos] == 'n' { // null
		if p.null != "" {
			f.replace(p.null)
		} else {
			f.pos += len("null")
		}
		return
	}
	switch p.kind {
	case reflect.Pointer:
		f.value(p.elem)
	case reflect.Struct:
		f.object(p.fields, nil)
	case reflect.Map:
		if p.elem == nil {
			f.skip()
			return
		}
		f.object(nil, p.elem)
	case reflect.Slice, reflect.Array:
		if p.elem == nil || f.in[f.pos] != '[' { // nothing to fill, or a []byte's string
			f.skip()
			return
		}
		f.pos++ // [
		for f.in[f.pos] != ']' {
			f.value(p.elem)
			if f.in[f.pos] == ',' {
				f.pos++
			}
		}
		f.pos++ // ]
	default:
		f.skip()
	}
}

// object reads an object: a struct's, whose members' values are of the
// plans fields gives their names, or a map's, whose values are of plan
// elem.
func (f *nilFiller) object(fields map[string]*fillPlan, elem *fillPlan) {
	f.pos++ // {
	for f.in[f.pos] != '}' {
		start := f.pos
		f.skip()
		p := elem
		if fields != nil {
			name := f.in[start+1 : f.pos-1]
			if bytes.IndexByte(name, '\\') >= 0 {
				var s string
				_ = json.Unmarshal(f.in[start:f.pos], &s) // encoding/json wrote it: valid
				name = []byte(s)
			}
			p = fields[string(name)]
		}
		f.pos++ // :
		f.value(p)
		if f.in[f.pos] == ',' {
			f.pos++
		}
	}
	f.pos++ // }
}

// replace writes with in place of the null at pos.
func (f *nilFiller) replace(with string) {
	f.out = append(f.out, f.in[f.done:f.pos]...)
	f.out = append(f.out, with...)
	f.pos += len("null")
	f.done = f.pos
}

// skip moves pos past the value at pos.
func (f *nilFiller) skip() {
	depth := 0
	for {
		switch f.in[f.pos] {
		case '"':
			f.pos++
			for {
				f.pos += bytes.IndexByte(f.in[f.pos:], '"')
				if !escaped(f.in, f.pos) {
					break
				}
				f.pos++
			}
			f.pos++
		case '{', '[':
			depth++
			f.pos++
		case '}', ']':
			depth--
			f.pos++
		case ',', ':': // between members or elements of a value skipped
			f.pos++
		default: // a number, true, false or null
			f.pos++
			for f.pos < len(f.in) && !endsScalar(f.in[f.pos]) {
				f.pos++
			}
		}
		if depth == 0 {
			return
		}
	}
}

// endsScalar reports a byte that ends a number or a literal in compact
// JSON.
func endsScalar(c byte) bool { return c == ',' || c == ']' || c == '}' }

// escaped reports whether the quote at in[i] is escaped: preceded by an
// odd number of backslashes.
func escaped(in []byte, i int) bool {
	n := 0
	for i--; in[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}
