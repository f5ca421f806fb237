package digest

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/mcplive/adapter/internal/draw"
)

// The digest is of a result's JSON (livedigest.go), made by the walk of
// the result's type where it can (walk.go). What must hold, for
// both forms: two results whose JSON differs have different digests (else
// a change would go unnoticed), a result json cannot encode is json's
// error, values json writes alike have one digest (for the walk: values of
// one type), and a failure's digest is its message's.

// digestForm is one way the registry digests a result; perType, a form
// that tells apart only values of one type, the result type of the
// command whose results it digests.
type digestForm struct {
	name    string
	of      func(any) (Digest, error)
	perType bool
}

// digestForms are the digest of a result's JSON, and the digest the
// registry makes for a command whose result type is the value's own: of a
// result handed to it (walk), and of one in the run's result slot (in
// place).
func digestForms(ds *Hasher) []digestForm {
	return []digestForm{
		{"json", ds.OfJSON, false},
		{"walk", func(v any) (Digest, error) { return ds.Of(v, walkOf(v)) }, true},
		{"in place", func(v any) (Digest, error) { return ofResultInPlace(ds, v) }, true},
	}
}

// ofResultInPlace is the digest of v read where a re-run's result slot
// holds it (resultSlot), as the registry digests a re-run's result when no
// middleware of the user's sees it.
func ofResultInPlace(ds *Hasher, v any) (Digest, error) {
	rw := walkOf(v)
	if rw == nil {
		return ds.Of(v, nil)
	}
	slot := rw.scratch.Get()
	defer rw.scratch.Put(slot)
	defer rw.Clear(slot)
	reflect.ValueOf(slot).Elem().Set(reflect.ValueOf(v))
	return ds.At(slot, rw)
}

// A result digested in its slot has the digest the walk of the value
// gives, also where the walk gives up (a value deeper than json's depth,
// which goes by its JSON) and where json fails.
func TestDigestInPlaceIsTheWalks(t *testing.T) {
	ds := NewHasher()
	var deep *cyclic
	for range 3000 {
		deep = &cyclic{Next: deep}
	}
	loop := &cyclic{}
	loop.Next = loop
	f := 2.5
	for name, v := range map[string]any{
		"int":       42,
		"row":       dInner{A: 1, B: "x", C: &f},
		"rows":      []dInner{{A: 1}, {A: 2, B: "y"}},
		"flat":      dFlat{Name: "a", Tags: []string{"t"}, List: []dInner{{A: 3}}},
		"map":       map[string]int{"a": 1},
		"deep":      deep,
		"cycle":     loop,
		"interface": []any{1, "two", dOther{X: 3}},
	} {
		want, wantErr := ds.Of(v, walkOf(v))
		got, err := ofResultInPlace(ds, v)
		if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("%s: in place %x, %v; the walk's %x, %v", name, got, err, want, wantErr)
		}
	}
}

// walkOf is the walk of v's type, as a command returning that type has.
func walkOf(v any) *Walk {
	if v == nil {
		return nil
	}
	return NewWalk(reflect.TypeOf(v))
}

type dInner struct {
	A int      `json:"a"`
	B string   `json:"b,omitempty"`
	C *float64 `json:"c"`
}

// dOther has dInner's layout and other names: in an interface the two
// must not be confused.
type dOther struct {
	X int
	Y string
	Z *float64
}

type dEmbedded struct{ E bool }

type dhidden struct{ H int } // embedded unexported: H is promoted by json

type dLevel string

type dRich struct {
	dEmbedded
	*dhidden
	Name  string         `json:"name"`
	Level dLevel         `json:"level"`
	Tags  []string       `json:"tags"`
	Bytes []byte         `json:"bytes"`
	Inner dInner         `json:"inner"`
	Ptr   *dInner        `json:"ptr"`
	List  []dInner       `json:"list"`
	Attrs map[string]any `json:"attrs"`
	Any   any            `json:"any"`
	When  time.Time      `json:"when"`
	Arr   [2]uint8       `json:"arr"`
	F32   float32        `json:"f32"`
	U     uint16         `json:"u,string"`
	Skip  int            `json:"-"`
	skip  int
}

// dFlat is dRich without its embedded structs, so that the walk goes
// through it field by field rather than handing it to json whole.
type dFlat struct {
	Name      string         `json:"name"`
	Level     dLevel         `json:"level"`
	Tags      []string       `json:"tags"`
	Bytes     []byte         `json:"bytes"`
	Inner     dInner         `json:"inner"`
	Ptr       *dInner        `json:"ptr"`
	List      []dInner       `json:"list"`
	Attrs     map[string]any `json:"attrs"`
	Any       any            `json:"any"`
	When      time.Time      `json:"when"`
	Arr       [2]uint8       `json:"arr"`
	F32       float32        `json:"f32"`
	U         uint16         `json:"u,string"`
	Skip      int            `json:"-"`
	skip      int
	Ms        []addrMarshaler `json:"ms"`   // addressable: json calls the method
	M         addrMarshaler   `json:"m"`    // not addressable here: json writes N
	Flag      bool            `json:"flag"` // with E, what the embedded parts held
	Hidden    *int            `json:"hidden,omitempty"`
	ZeroFloat float64         `json:"zf,omitzero"`
	Rows      []dRow          `json:"rows"` // rows of words and strings
}

// dRow is a row of words and strings only, which the walk takes as its
// words, then its strings.
type dRow struct {
	A int    `json:"a"`
	B string `json:"b"`
	N int64  `json:"n"`
	T string `json:"t"`
}

// flat is v as a dFlat.
func flat(v dRich) dFlat {
	f := dFlat{
		Name: v.Name, Level: v.Level, Tags: v.Tags, Bytes: v.Bytes, Inner: v.Inner, Ptr: v.Ptr,
		List: v.List, Attrs: v.Attrs, Any: v.Any, When: v.When, Arr: v.Arr, F32: v.F32, U: v.U,
		Skip: v.Skip, skip: v.skip, Flag: v.E, M: addrMarshaler{int(v.U)},
	}
	if v.Inner.C != nil {
		f.ZeroFloat = *v.Inner.C
	}
	for _, in := range v.List {
		f.Ms = append(f.Ms, addrMarshaler{in.A})
		f.Rows = append(f.Rows, dRow{A: in.A, B: in.B, N: int64(v.U), T: v.Name})
	}
	if v.dhidden != nil {
		h := v.dhidden.H
		f.Hidden = &h
	}
	return f
}

func drawFloatPtr(c *draw.Choices) *float64 {
	if !c.Bool() {
		return nil
	}
	f := draw.Pick(c, []float64{0, math.Copysign(0, -1), 1.5, 1e300})
	return &f
}

func drawInner(c *draw.Choices) dInner {
	return dInner{
		A: c.IntRange(0, 2),
		B: draw.Pick(c, []string{"", "x", "é", "\xff"}),
		C: drawFloatPtr(c),
	}
}

var digestZones = []*time.Location{time.UTC, time.FixedZone("A", 3600), time.FixedZone("B", 3600)}

func drawRich(c *draw.Choices) dRich {
	v := dRich{
		dEmbedded: dEmbedded{E: c.Bool()},
		Name:      draw.Pick(c, []string{"", "ada", "ad", "a\"d"}),
		Level:     dLevel(draw.Pick(c, []string{"", "x"})),
		Inner:     drawInner(c),
		When: time.Date(2026, 1, 2, 3, 4, 5, draw.Pick(c, []int{0, 1}), time.UTC).
			In(draw.Pick(c, digestZones)),
		Arr:  [2]uint8{uint8(c.IntRange(0, 1)), 0},
		F32:  draw.Pick(c, []float32{0, 0.1, 1 << 30}),
		U:    uint16(c.IntRange(0, 2)),
		Skip: c.IntRange(0, 2),
		skip: c.IntRange(0, 2),
	}
	if c.Bool() {
		v.dhidden = &dhidden{H: c.IntRange(0, 1)}
	}
	switch c.IntRange(0, 2) {
	case 1:
		v.Tags = []string{}
	case 2:
		v.Tags = draw.PickN(c, []string{"", "a", "ab"}, 1, 3)
	}
	switch c.IntRange(0, 2) {
	case 1:
		v.Bytes = []byte{}
	case 2:
		v.Bytes = []byte(draw.Pick(c, []string{"\x00", "ab"}))
	}
	if c.Bool() {
		in := drawInner(c)
		v.Ptr = &in
	}
	for range c.IntRange(0, 2) {
		v.List = append(v.List, drawInner(c))
	}
	if c.Bool() {
		v.Attrs = map[string]any{}
		for _, k := range draw.Distinct(c, []string{"k", "l", "m"}, 0, 3) {
			v.Attrs[k] = drawAny(c)
		}
	}
	v.Any = drawAny(c)
	return v
}

func drawAny(c *draw.Choices) any {
	switch c.IntRange(0, 7) {
	case 0:
		return nil
	case 1:
		return draw.Pick(c, []string{"", "1"})
	case 2:
		return c.IntRange(0, 1)
	case 3:
		return float64(c.IntRange(0, 1))
	case 4:
		return drawInner(c)
	case 5:
		in := drawInner(c)
		return dOther{X: in.A, Y: in.B, Z: in.C}
	case 6:
		return []any{c.Bool()}
	default:
		return json.RawMessage(draw.Pick(c, []string{`1`, `"1"`, `{"a": 1}`, `{"a":1}`}))
	}
}

// cloneRich copies v deeply and changes what json leaves out.
func cloneRich(v dRich) dRich {
	var c dRich
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c = v
	c.Skip, c.skip = v.Skip+1, v.skip+1
	if v.dhidden != nil {
		h := *v.dhidden
		c.dhidden = &h
	}
	c.Tags = append([]string(nil), v.Tags...)
	if v.Tags != nil && len(v.Tags) == 0 {
		c.Tags = []string{}
	}
	c.Bytes = append([]byte(nil), v.Bytes...)
	if v.Bytes != nil && len(v.Bytes) == 0 {
		c.Bytes = []byte{}
	}
	if v.Ptr != nil {
		p := *v.Ptr
		c.Ptr = &p
	}
	c.List = append([]dInner(nil), v.List...)
	if v.Attrs != nil {
		c.Attrs = make(map[string]any, len(v.Attrs))
		for k, a := range v.Attrs {
			c.Attrs[k] = a
		}
	}
	if b2, _ := json.Marshal(c); !bytes.Equal(b, b2) {
		panic("cloneRich changed the JSON")
	}
	return c
}

// TestDigestTellsApartWhatJSONTellsApart runs the cases of seeds 1 to
// draw.Checks; FuzzDigestTellsApartWhatJSONTellsApart those the fuzzer's bytes
// decide.
func TestDigestTellsApartWhatJSONTellsApart(t *testing.T) {
	ds := NewHasher()
	draw.ForEachSeed(t, draw.Checks, func(t *testing.T, c *draw.Choices) { checkDigestTellsApart(t, c, ds) })
}

func FuzzDigestTellsApartWhatJSONTellsApart(f *testing.F) {
	f.Add([]byte{})
	draw.AddRandomInputs(f, 4, 128)
	ds := NewHasher()
	f.Fuzz(func(t *testing.T, data []byte) { checkDigestTellsApart(t, draw.FromBytes(data), ds) })
}

// checkDigestTellsApart draw.Checks one case of both digests, on a dRich and
// on its dFlat: different JSON, different digests; the same JSON, the
// same digest.
func checkDigestTellsApart(t *testing.T, c *draw.Choices, ds *Hasher) {
	v1, other := drawRich(c), drawRich(c)
	// v2 is v1 with one field, or the hidden one, from other: the
	// digests must differ whenever the JSON does.
	v2 := cloneRich(v1)
	rv2, rother := reflect.ValueOf(&v2).Elem(), reflect.ValueOf(other)
	if k := c.IntRange(0, rv2.NumField()); k < rv2.NumField() && rv2.Field(k).CanSet() {
		rv2.Field(k).Set(rother.Field(k))
	} else {
		v2.dhidden = other.dhidden
	}
	for _, form := range digestForms(ds) {
		for _, pair := range [][2]any{
			{v1, v2}, {v1, other}, {v1.Any, v2.Any}, {v1.Attrs, other.Attrs},
			{flat(v1), flat(v2)}, {flat(v1), flat(other)},
			{flat(v1).Rows, flat(v2).Rows}, {flat(v1).Rows, flat(other).Rows},
		} {
			checkDigestPair(t, form, pair)
		}
		// Equal in everything json reads: equal digests.
		for _, pair := range [][2]any{{v1, cloneRich(v1)}, {flat(v1), flat(cloneRich(v1))}} {
			d1, _ := form.of(pair[0])
			if dc, _ := form.of(pair[1]); dc != d1 {
				t.Fatalf("%s: a copy of %+v has another digest", form.name, pair[0])
			}
		}
	}
}

// checkDigestPair draw.Checks that form errs where json does, and that
// different JSON gives different digests. The walk only ever compares
// results of its command's one type (a command whose result type is an
// interface has none), so two values of different types are no pair for
// it: the string "1" and json.RawMessage(`1`) walk alike (a length of one,
// the byte '1'), where json writes "1" and 1. The fuzzer found that pair
// (testdata/fuzz).
func checkDigestPair(t *testing.T, form digestForm, pair [2]any) {
	t.Helper()
	j1, err1 := json.Marshal(pair[0])
	j2, err2 := json.Marshal(pair[1])
	d1, derr1 := form.of(pair[0])
	d2, derr2 := form.of(pair[1])
	if (err1 == nil) != (derr1 == nil) || (err2 == nil) != (derr2 == nil) {
		t.Fatalf("%s: json errors %v, %v; digest errors %v, %v", form.name, err1, err2, derr1, derr2)
	}
	if form.perType && reflect.TypeOf(pair[0]) != reflect.TypeOf(pair[1]) {
		return
	}
	if err1 == nil && err2 == nil && !bytes.Equal(j1, j2) && d1 == d2 {
		t.Fatalf("%s: same digest for different JSON:\n%s\n%s", form.name, j1, j2)
	}
}

func TestDigestCases(t *testing.T) {
	ds := NewHasher()
	f := 1.5
	for name, pair := range map[string][2]any{
		"types in an interface": {
			[]any{dInner{A: 1, B: "x", C: &f}}, []any{dOther{X: 1, Y: "x", Z: &f}}},
		"promoted from an unexported embedded struct": {
			dRich{dhidden: &dhidden{H: 1}}, dRich{dhidden: &dhidden{H: 2}}},
		"embedded nil and zero": {
			dRich{dhidden: &dhidden{}}, dRich{}},
		"nil and empty bytes":        {dRich{Bytes: []byte{}}, dRich{}},
		"nil and empty slice":        {dRich{Tags: []string{}}, dRich{}},
		"nil and empty map":          {map[string]int{}, map[string]int(nil)},
		"map keys":                   {map[string]int{"a": 1}, map[string]int{"b": 1}},
		"map values":                 {map[string]int{"a": 1}, map[string]int{"a": 2}},
		"string boundaries":          {[]string{"ab", "c"}, []string{"a", "bc"}},
		"negative zero":              {0.0, math.Copysign(0, -1)},
		"float32":                    {float32(0.1), float32(0.2)},
		"flat: nil and empty bytes":  {dFlat{Bytes: []byte{}}, dFlat{}},
		"flat: nil and empty slice":  {dFlat{List: []dInner{}}, dFlat{}},
		"flat: nil and zero pointer": {dFlat{Hidden: new(int)}, dFlat{}},
		"flat: string boundaries": {
			dFlat{Tags: []string{"ab", "c"}}, dFlat{Tags: []string{"a", "bc"}}},
		"flat: fields' boundaries":    {dFlat{Name: "a", Level: "b"}, dFlat{Name: "ab"}},
		"flat: addressable marshaler": {dFlat{Ms: []addrMarshaler{{1}}}, dFlat{Ms: []addrMarshaler{{2}}}},
		"flat: omitzero":              {dFlat{ZeroFloat: 1}, dFlat{}},
		"flat: times":                 {dFlat{When: time.Unix(1, 0).UTC()}, dFlat{When: time.Unix(2, 0).UTC()}},
		"recursive type": {
			&cyclic{Next: &cyclic{}}, &cyclic{Next: &cyclic{Next: &cyclic{}}}},
		// json calls the method of a nil pointer held in a field of
		// interface type, and writes null for a nil interface.
		"nil pointer in a marshaler field": {
			holdsMarshaler{M: (*nilMarshaler)(nil)}, holdsMarshaler{}},
		"nil pointer in a text marshaler field": {
			holdsTextMarshaler{M: (*nilMarshaler)(nil)}, holdsTextMarshaler{}},
	} {
		j1, _ := json.Marshal(pair[0])
		j2, _ := json.Marshal(pair[1])
		if bytes.Equal(j1, j2) {
			t.Fatalf("%s: the case is wrong, the JSON is the same: %s", name, j1)
		}
		for _, form := range digestForms(ds) {
			d1, err1 := form.of(pair[0])
			d2, err2 := form.of(pair[1])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s, %s: %v, %v", name, form.name, err1, err2)
			}
			if d1 == d2 {
				t.Errorf("%s, %s: one digest for %s and %s", name, form.name, j1, j2)
			}
		}
	}
}

type addrMarshaler struct{ N int }

func (m *addrMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(`"n` + strings.Repeat("!", m.N) + `"`), nil
}

type badMarshaler struct{}

func (badMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{`), nil }

type cyclic struct {
	Next *cyclic `json:"next"`
}

type withChan struct {
	C chan int `json:"c"`
}

type withHiddenChan struct {
	C chan int `json:"-"`
	c chan int
	N int
}

func TestDigestErrorsAsJSONDoes(t *testing.T) {
	ds := NewHasher()
	loop := &cyclic{}
	loop.Next = loop
	for name, v := range map[string]any{
		"NaN":               math.NaN(),
		"infinity in a map": map[string]any{"x": math.Inf(1)},
		"cycle":             loop,
		"channel":           withChan{C: make(chan int)},
		"nil channel":       withChan{},
		"invalid MarshalJSON": struct {
			B badMarshaler `json:"b"`
		}{},
		"invalid RawMessage":      json.RawMessage(`{"a":`),
		"time out of range":       time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		"complex":                 complex(1, 2),
		"flat: NaN":               dFlat{ZeroFloat: math.NaN()},
		"flat: infinity":          dFlat{F32: float32(math.Inf(-1))},
		"flat: in a list":         dFlat{List: []dInner{{}, {C: ptrTo(math.Inf(1))}}},
		"flat: time out of range": dFlat{When: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"flat: in an interface":   dFlat{Any: []any{math.NaN()}},
		"slice cycle":             selfSlice(),
	} {
		_, jerr := json.Marshal(v)
		for _, form := range digestForms(ds) {
			_, derr := form.of(v)
			if jerr == nil || derr == nil {
				t.Errorf("%s, %s: json error %v, digest error %v: want both", name, form.name, jerr, derr)
				continue
			}
			if jerr.Error() != derr.Error() {
				t.Errorf("%s, %s: json error %q, digest error %q", name, form.name, jerr, derr)
			}
		}
	}
	for _, form := range digestForms(ds) {
		if _, err := form.of(withHiddenChan{c: make(chan int), N: 1}); err != nil {
			t.Errorf("%s: channels json leaves out: %v", form.name, err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// sliceOfItself is a slice type that can hold itself, without a pointer.
type sliceOfItself []sliceOfItself

func selfSlice() sliceOfItself {
	s := sliceOfItself{nil}
	s[0] = s
	return s
}

func TestDigestUsesMarshalers(t *testing.T) {
	for _, form := range digestForms(NewHasher()) {
		t.Run(form.name, func(t *testing.T) { checkDigestUsesMarshalers(t, form) })
	}
}

func checkDigestUsesMarshalers(t *testing.T, form digestForm) {
	digestOf := func(v any) Digest {
		t.Helper()
		d, err := form.of(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	type holder struct {
		M addrMarshaler   `json:"m"`
		P []addrMarshaler `json:"p"`
	}
	// Inside a slice the values are addressable and json calls the method;
	// a struct in an interface is not, and json encodes its field.
	a := holder{M: addrMarshaler{1}, P: []addrMarshaler{{1}}}
	b := holder{M: addrMarshaler{2}, P: []addrMarshaler{{1}}}
	c := holder{M: addrMarshaler{1}, P: []addrMarshaler{{2}}}
	if digestOf(a) == digestOf(b) || digestOf(a) == digestOf(c) {
		t.Fatal("marshalers' outputs differ, digests do not")
	}
	if digestOf(json.RawMessage(`{"a": 1}`)) != digestOf(json.RawMessage(`{"a":1}`)) {
		t.Fatal("json compacts RawMessage; the digest should agree")
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if digestOf(at) != digestOf(at.Add(time.Hour).Add(-time.Hour)) {
		t.Fatal("equal times, different digests")
	}
	if digestOf(at) == digestOf(at.In(time.FixedZone("X", 3600))) {
		t.Fatal("json writes the offset; the digest should see it")
	}
	if digestOf(time.Now()) == digestOf(time.Now().Add(time.Second)) {
		t.Fatal("different times, one digest")
	}
	if digestOf(json.Number("1")) == digestOf(json.Number("2")) {
		t.Fatal("numbers")
	}
	if _, err := form.of(json.Number("x")); err == nil {
		t.Fatal("json refuses an invalid json.Number")
	}
	if digestOf(map[int]string{1: "a"}) == digestOf(map[int]string{2: "a"}) {
		t.Fatal("maps with integer keys")
	}
	// A top-level value is not addressable: json writes the fields.
	if digestOf(addrMarshaler{1}) == digestOf(addrMarshaler{2}) {
		t.Fatal("a marshaler json does not call")
	}
}

// Values that json writes alike are no change to a client: one digest.
// The digest of the JSON gives one to values of any types; the walk, to
// values of one type, which is why a command whose result type is an
// interface is digested by its JSON.
func TestDigestSameJSONSameDigest(t *testing.T) {
	ds := NewHasher()
	f := 1.5
	forms := digestForms(ds)
	for name, pair := range map[string][2]any{
		"nil and a nil pointer": {nil, (*dInner)(nil)},
		"struct and map": {
			dInner{A: 1, B: "x", C: &f}, map[string]any{"a": 1, "b": "x", "c": 1.5}},
		"omitempty and shadowed fields": {dInner{A: 1}, map[string]any{"a": 1, "c": nil}},
		"int and float":                 {2, 2.0},
		"bytes and base64":              {[]byte("hi"), "aGk="},
		"named string":                  {dLevel("x"), "x"},
	} {
		checkSameDigest(t, name, forms[:1], pair)
	}
	for name, pair := range map[string][2]any{
		"promoted field": {
			dRich{dEmbedded: dEmbedded{E: true}}, dRich{dEmbedded: dEmbedded{E: true}, Skip: 1, skip: 2}},
		"fields json leaves out":   {dFlat{Skip: 1, skip: 2}, dFlat{}},
		"omitzero's negative zero": {dFlat{ZeroFloat: math.Copysign(0, -1)}, dFlat{}},
		"omitempty's negative zero": {
			omitsEmpty{F: math.Copysign(0, -1), S: []int{}, M: map[string]int{}}, omitsEmpty{}},
		"json.Number":            {json.Number(""), json.Number("0")},
		"omitzero by IsZero":     {zeroByMethod{Z: evenIsZero{2}}, zeroByMethod{Z: evenIsZero{4}}},
		"two fields of one name": {sameName{X: 1, Y: 2}, sameName{Y: 2}},
		"a tag name json rejects": {
			invalidTagName{X: 1, Y: 2}, invalidTagName{Y: 2}},
		"an int and a field json leaves out": {
			intThenSkipped{A: 1, B: true}, intThenSkipped{A: 1}},
		"RawMessage spacing": {dFlat{Any: json.RawMessage(`[1, 2]`)}, dFlat{Any: json.RawMessage(`[1,2]`)}},
		"time zones of one offset": {
			dFlat{When: time.Unix(0, 0).In(digestZones[1])}, dFlat{When: time.Unix(0, 0).In(digestZones[2])}},
	} {
		checkSameDigest(t, name, forms, pair)
	}
}

type omitsEmpty struct {
	F float64        `json:"f,omitempty"`
	S []int          `json:"s,omitempty"`
	M map[string]int `json:"m,omitempty"`
}

// evenIsZero is zero, for json's omitzero, when N is even.
type evenIsZero struct{ N int }

func (e evenIsZero) IsZero() bool { return e.N%2 == 0 }

type zeroByMethod struct {
	Z evenIsZero `json:"z,omitzero"`
}

// sameName has two fields of one name: json writes the tagged one.
type sameName struct {
	X int
	Y int `json:"X"`
}

// invalidTagName's X has a tag name json rejects ('), so json names it X,
// as Y's tag does, and writes Y alone.
type invalidTagName struct {
	X int `json:"x'"`
	Y int `json:"X"`
}

// intThenSkipped: where an int is 4 bytes (386, arm), B follows A within
// what an 8-byte read would take.
type intThenSkipped struct {
	A int  `json:"a"`
	B bool `json:"-"`
}

// nilMarshaler marshals a nil receiver too, as json lets a method do when
// the pointer is held in an interface.
type nilMarshaler struct{}

func (m *nilMarshaler) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte(`"nil"`), nil
	}
	return []byte(`"set"`), nil
}

func (m *nilMarshaler) MarshalText() ([]byte, error) {
	if m == nil {
		return []byte("nil"), nil
	}
	return []byte("set"), nil
}

type holdsMarshaler struct {
	M json.Marshaler `json:"m"`
}

type holdsTextMarshaler struct {
	M encoding.TextMarshaler `json:"m"`
}

func checkSameDigest(t *testing.T, name string, forms []digestForm, pair [2]any) {
	t.Helper()
	j1, err1 := json.Marshal(pair[0])
	j2, err2 := json.Marshal(pair[1])
	if err1 != nil || err2 != nil || !bytes.Equal(j1, j2) {
		t.Fatalf("%s: the case is wrong: %s (%v) and %s (%v)", name, j1, err1, j2, err2)
	}
	for _, form := range forms {
		d1, err1 := form.of(pair[0])
		d2, err2 := form.of(pair[1])
		if err1 != nil || err2 != nil || d1 != d2 {
			t.Errorf("%s, %s: digests %x (%v) and %x (%v) of %s", name, form.name, d1, err1, d2, err2, j1)
		}
	}
}

func TestDigestOfError(t *testing.T) {
	ds := NewHasher()
	boom := errors.New("boom")
	if ds.OfError(boom) != ds.OfError(fmt.Errorf("%s", "boom")) {
		t.Error("one message, two digests")
	}
	if ds.OfError(boom) == ds.OfError(errors.New("boom!")) {
		t.Error("two messages, one digest")
	}
	for _, form := range digestForms(ds) {
		for _, v := range []any{"boom", json.RawMessage(`"boom"`), nil} {
			if d, _ := form.of(v); d == ds.OfError(boom) {
				t.Errorf("%s: the failure %q and the result %v share a digest", form.name, boom, v)
			}
		}
	}
	// The walk's bytes are no JSON text's.
	w, _ := ds.Of("x", walkOf("x"))
	if j, _ := ds.OfJSON("x"); w == j {
		t.Error("the walk and the JSON of one string share a digest")
	}
	// The seeds are the registry's: a digest means nothing to another.
	d1, _ := ds.Of("x", walkOf("x"))
	d2, _ := NewHasher().Of("x", walkOf("x"))
	if d1 == d2 {
		t.Error("two registries, one digest")
	}
}

// A result of another type than the command's (a middleware may return
// one) is digested by its JSON; so are results of an interface type.
func TestDigestOfAnotherType(t *testing.T) {
	ds := NewHasher()
	rw := walkOf(dInner{})
	m := map[string]any{"a": 1}
	got, err := ds.Of(m, rw)
	if want, _ := ds.OfJSON(m); err != nil || got != want {
		t.Errorf("a map under dInner's walk: %x (%v), want its JSON's %x", got, err, want)
	}
	if rw := NewWalk(reflect.TypeFor[any]()); rw != nil {
		t.Error("an interface type has a walk")
	}
}

func TestDigestDeepButFinite(t *testing.T) {
	for _, form := range digestForms(NewHasher()) {
		t.Run(form.name, func(t *testing.T) { checkDigestDeepButFinite(t, form) })
	}
}

func checkDigestDeepButFinite(t *testing.T, form digestForm) {
	var deep *cyclic
	for range 3000 { // json looks for cycles beyond a depth of 1000
		deep = &cyclic{Next: deep}
	}
	d1, err := form.of(deep)
	if err != nil {
		t.Fatal(err)
	}
	deep.Next.Next = nil
	d2, err := form.of(deep)
	if err != nil {
		t.Fatal(err)
	}
	if d1 == d2 {
		t.Fatal("a deep value changed and its digest did not")
	}
	var jerr *json.UnsupportedValueError
	loop := &cyclic{}
	loop.Next = loop
	if _, err := form.of(loop); !errors.As(err, &jerr) {
		t.Fatalf("cycle: %v", err)
	}
}

// A walk longer than the walker's buffer is hashed as it goes
// (walkFlush): the digest must not depend on where the buffer was cut, and
// must see a change on either side of a cut.
func TestDigestOfLargeResults(t *testing.T) {
	ds := NewHasher()
	for _, n := range []int{walkFlush/12 - 1, walkFlush / 12, walkFlush/12 + 1, 3 * walkFlush / 12} {
		tags := make([]string, n)
		for i := range tags {
			tags[i] = fmt.Sprintf("tag-%06d", i) // 10 bytes, 11 with its length
		}
		v := dFlat{Tags: tags}
		d, err := ds.Of(v, walkOf(v))
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := ds.Of(dFlat{Tags: slices.Clone(tags)}, walkOf(v)); again != d {
			t.Errorf("%d tags: a copy has another digest", n)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			changed := slices.Clone(tags)
			changed[at] = "tag-xxxxxx"
			if dc, _ := ds.Of(dFlat{Tags: changed}, walkOf(v)); dc == d {
				t.Errorf("%d tags: tag %d changed, the digest did not", n, at)
			}
		}
	}
}

// packedRow has runs of integers and booleans the walk copies at once,
// and padding between some of them (after C, before E) that it must not
// read.
type packedRow struct {
	A int32  `json:"a"`
	B int32  `json:"b"`
	C bool   `json:"c"`
	E int64  `json:"e"`
	S string `json:"s"`
	D uint8  `json:"d"`
	F uint16 `json:"f"`
}

// The walk copies neighbouring integers and booleans as one run of
// memory: a change in any of them changes the Digest, and what lies in
// the padding between fields does not.
func TestDigestWalkCopiesRunsOfFields(t *testing.T) {
	ds := NewHasher()
	rw := NewWalk(reflect.TypeFor[packedRow]())
	of := func(v packedRow) Digest {
		t.Helper()
		d, err := ds.Of(v, rw)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := packedRow{A: 1, B: 2, C: true, E: 4, S: "s", D: 5, F: 6}
	d := of(base)
	for name, change := range map[string]func(*packedRow){
		"a": func(r *packedRow) { r.A++ }, "b": func(r *packedRow) { r.B++ },
		"c": func(r *packedRow) { r.C = false }, "e": func(r *packedRow) { r.E++ },
		"s": func(r *packedRow) { r.S = "t" }, "d": func(r *packedRow) { r.D++ },
		"f": func(r *packedRow) { r.F++ },
		// Same JSON, bytes moved between neighbours: apart only if each
		// field keeps its own place.
		"a into b": func(r *packedRow) { r.A, r.B = r.B, r.A },
	} {
		v := base
		change(&v)
		if of(v) == d {
			t.Errorf("changing %s kept the digest", name)
		}
	}
	// Garbage in the padding after C and after D: the same JSON, the
	// same digest. (Boxed from memory: passed by value, the fields would
	// travel in registers and leave the padding behind.)
	v := new(packedRow)
	*v = base
	for _, pad := range [][2]uintptr{
		{unsafe.Offsetof(v.C) + 1, unsafe.Offsetof(v.E)},
		{unsafe.Offsetof(v.D) + 1, unsafe.Offsetof(v.F)},
	} {
		for i := pad[0]; i < pad[1]; i++ {
			*(*byte)(unsafe.Add(unsafe.Pointer(v), i)) = 0xAA
		}
	}
	var boxed any = *v
	d2, err := ds.Of(boxed, rw)
	if err != nil {
		t.Fatal(err)
	}
	if d2 != d {
		t.Error("bytes in the padding changed the digest")
	}
}
