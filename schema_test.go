package adapter

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type (
	// pointerNode is recursive, so it is published with $defs; its
	// pointer comes first, so that taking it out of a required list
	// shifts the others.
	pointerNode struct {
		Parent   *pointerNode  `json:"parent"`
		Name     string        `json:"name"`
		Children []pointerNode `json:"children,omitempty"`
	}
	pointerItem struct {
		P *int `json:"p"`
		N int  `json:"n"`
	}
	pointersInLists struct {
		Items []pointerItem             `json:"items"`
		ByKey map[string]pointerItem    `json:"by_key,omitempty"`
		Maybe *pointerItem              `json:"maybe,omitempty" jsonschema:"nullable"`
		Pairs [2]pointerItem            `json:"pairs,omitempty"`
		Deep  map[string][]*pointerItem `json:"deep,omitempty"`
		ByID  map[int]pointerItem       `json:"by_id,omitempty"`
	}
)

// docs/commands.md: "A field is required unless it is a pointer or has
// omitempty", at every level: in the items of a list, the values of a map,
// behind a nullable oneOf and in the $defs of a recursive type as well as
// in the properties of a struct.
func TestPointerFieldsAreOptionalAtEveryLevel(t *testing.T) {
	cases := []struct {
		name string
		cmd  func(*testing.T) *command
		raw  string
	}{
		{"top of a recursive type", mustCommand[pointerNode], `{"name":"a"}`},
		{"inside a recursive type", mustCommand[pointerNode], `{"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]}`},
		{"list item", mustCommand[pointersInLists], `{"items":[{"n":1}]}`},
		{"map value", mustCommand[pointersInLists], `{"items":[],"by_key":{"a":{"n":1}}}`},
		{"behind nullable", mustCommand[pointersInLists], `{"items":[],"maybe":{"n":1}}`},
		{"array item", mustCommand[pointersInLists], `{"items":[],"pairs":[{"n":1},{"n":2}]}`},
		{"list in a map", mustCommand[pointersInLists], `{"items":[],"deep":{"a":[{"n":1}]}}`},
		{"map with integer keys", mustCommand[pointersInLists], `{"items":[],"by_id":{"7":{"n":1}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.cmd(t).decode([]byte(tc.raw)); err != nil {
				t.Errorf("%s: %v, want it accepted: every pointer left out decodes to nil", tc.raw, err)
			}
		})
	}
}

type (
	embedA   struct{ Name string }
	embedB   struct{ Name string }
	embedTag struct {
		Name string `json:"name"`
	}
	embedLabel string
	embedInt8  int8
	embedInner struct {
		Name string `json:"name"`
	}
	EmbedExported struct {
		Name string `json:"name"`
	}

	// Refused: the schema would publish a property Go does not decode
	// into the field it describes.
	embedTie struct { // Go drops Name: two at one depth
		embedA
		embedB
		ID int `json:"id"`
	}
	embedDeeperLast struct { // invopop takes the deeper, string one
		Name int `json:"name"`
		embedTag
	}
	embedUntaggedBesideTagged struct { // Go takes the tagged one
		embedTag
		Other struct {
			Name int
		} `json:",inline"`
	}
	embedUnexportedNonStruct struct { // Go ignores embedLabel
		embedLabel
		ID int `json:"id"`
	}
	embedUnexportedPointer struct { // Go cannot allocate *embedInner
		*embedInner
		ID int `json:"id"`
	}
	embedInList struct {
		Items []embedTie `json:"items"`
	}

	// Accepted: Go and the schema agree.
	embedShallowerLast struct {
		embedTag
		Name int `json:"name"`
	}
	embedOrdinary struct {
		embedInner
		*EmbedExported `json:"exported,omitempty"`
		ID             int `json:"id"`
	}
	embedExportedPointer struct {
		*EmbedExported
		ID int `json:"id"`
	}
	embedTaggedTie struct { // Go takes the tagged one, which comes last
		embedA
		embedTagUpper
	}
	embedTagUpper struct {
		Name string `json:"Name"`
	}
)

// The declaration of arguments whose published properties encoding/json
// would not decode into the fields the schema describes is refused, naming
// the command, the property and why; the embeddings where the two agree
// still declare, and what the schema publishes decodes.
func TestEmbeddedFieldsAgreeWithEncodingJSON(t *testing.T) {
	refused := []struct {
		name string
		decl func(scheme, name, description string, live bool, opts []CommandOption) (*command, error)
		want string
	}{
		{"two at one depth", newCommand[embedTie, any], `command "cmd": arguments: property "Name" of adapter.embedTie (field embedB.Name): encoding/json decodes no field of that name`},
		{"deeper after shallower", newCommand[embedDeeperLast, any], `command "cmd": arguments: property "name" of adapter.embedDeeperLast: the schema describes field embedTag.Name, but encoding/json decodes field Name`},
		{"inline option", newCommand[embedUntaggedBesideTagged, any], `command "cmd": arguments: property "Name" of adapter.embedUntaggedBesideTagged (field Other.Name): encoding/json decodes no field of that name`},
		{"unexported non-struct", newCommand[embedUnexportedNonStruct, any], `command "cmd": arguments: property "embedLabel" of adapter.embedUnexportedNonStruct (field embedLabel): encoding/json decodes no field`},
		{"unexported pointer", newCommand[embedUnexportedPointer, any], `command "cmd": arguments: property "name" of adapter.embedUnexportedPointer (field embedInner.Name): it is promoted through an embedded pointer to an unexported struct type`},
		{"in a list", newCommand[embedInList, any], `command "cmd": arguments: property "items" of adapter.embedInList: property "Name" of adapter.embedTie (field embedB.Name)`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.decl("app", "cmd", "", true, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("declared %v with error %v, want an error starting %q", c != nil, err, tc.want)
			}
		})
	}
	accepted := []struct {
		name string
		cmd  func(*testing.T) *command
		raw  string
	}{
		{"shallower after deeper", mustCommand[embedShallowerLast], `{"name":3}`},
		{"ordinary embedding, and a tagged one", mustCommand[embedOrdinary], `{"name":"a","id":1,"exported":{"name":"b"}}`},
		{"exported pointer", mustCommand[embedExportedPointer], `{"name":"a","id":1}`},
		{"the tagged one of a tie", mustCommand[embedTaggedTie], `{"Name":"a"}`},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.cmd(t).decode([]byte(tc.raw)); err != nil {
				t.Errorf("%s: %v", tc.raw, err)
			}
		})
	}
}

type (
	// textID is a UUID-like [16]byte that encoding/json reads and writes as
	// text, never as a list of bytes.
	textID [16]byte
	// textLevel is an integer that encoding/json reads and writes as its
	// name.
	textLevel    int
	selfDecoding struct {
		Addr  netip.Addr `json:"addr"`
		ID    textID     `json:"id"`
		Level textLevel  `json:"level"`
	}
	bigArgs struct {
		N big.Int `json:"n"`
	}
	urlArgs struct {
		Home url.URL `json:"home"`
	}
)

func (id textID) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(id[:])), nil }
func (id *textID) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(id) {
		return errors.New("want 32 hex digits")
	}
	_, err := hex.Decode(id[:], b)
	return err
}
func (l textLevel) MarshalText() ([]byte, error) { return []byte([]string{"low", "high"}[l]), nil }
func (l *textLevel) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 0
	case "high":
		*l = 1
	default:
		return errors.New("unknown level")
	}
	return nil
}

// A type that decodes itself (netip.Addr, a UUID, big.Int) is published as
// what encoding/json hands it, a string for text, not as its Go kind, which
// encoding/json would refuse: the command could not be called at all. The
// same values are accepted by a tools/call and by a read of its template,
// and its result's outputSchema holds what Go writes.
func TestTypesThatDecodeThemselves(t *testing.T) {
	c := mustCommand[selfDecoding](t)
	const call = `{"addr":"192.0.2.1","id":"00112233445566778899aabbccddeeff","level":"high"}`
	got, err := c.decode([]byte(call))
	if err != nil {
		t.Fatalf("tools/call %s: %v", call, err)
	}
	if a := got.(selfDecoding); a.Level != 1 || a.Addr.String() != "192.0.2.1" {
		t.Errorf("decoded %+v", a)
	}
	b := mustCommand[bigArgs](t)
	if got, err := b.decode([]byte(`{"n":12345678901234567890123}`)); err != nil || func() bool { n := got.(bigArgs).N; return n.String() != "12345678901234567890123" }() {
		t.Errorf("big.Int: %v %v", got, err)
	}
	if b.reason != ReasonNotScalar || b.detail != "n" {
		t.Errorf("big.Int: reason %q %q, want %q n", b.reason, b.detail, ReasonNotScalar)
	}
	if c.tmpl == nil {
		t.Fatalf("no template: %s %s", c.reason, c.detail)
	}
	values, err := c.tmpl.parse("app://cmd/192.0.2.1/00112233445566778899aabbccddeeff/high")
	if err != nil {
		t.Fatalf("template %s: %v", c.tmpl.raw, err)
	}
	raw, err := c.argsFromURI(values)
	if err == nil {
		_, err = c.decode(raw)
	}
	if err != nil {
		t.Errorf("read: %v", err)
	}
	for raw, want := range map[string]string{
		`{"addr":"x","id":"00112233445566778899aabbccddeeff","level":"high"}`:    "addr: must be a valid netip.Addr",
		`{"addr":"192.0.2.1","id":"00","level":"high"}`:                          "id: must be a valid adapter.textID",
		`{"addr":"192.0.2.1","id":"00112233445566778899aabbccddeeff","level":1}`: "level: must be a string",
	} {
		if _, err := c.decode([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	out, ok, err := outputSchema(reflect.TypeFor[selfDecoding]())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	checkSchema(t, out, selfDecoding{Addr: netip.MustParseAddr("192.0.2.1"), Level: 1})
	if out, ok, err = outputSchema(reflect.TypeFor[bigArgs]()); err != nil || !ok {
		t.Fatal(ok, err)
	}
	checkSchema(t, out, bigArgs{N: *big.NewInt(12)})
}

// url.URL is published by invopop as a string with format uri, but
// encoding/json decodes it as a struct of its fields: no string would
// ever do. The declaration is refused.
func TestURLArgumentIsRefused(t *testing.T) {
	_, err := newCommand[urlArgs, any]("app", "cmd", "", true, nil)
	want := `command "cmd": arguments: property "home" of adapter.urlArgs: url.URL is published as a string, but encoding/json decodes it from an object of its fields`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// checkSchema fails t unless v, as encoding/json writes it, conforms to
// schema.
func checkSchema(t *testing.T, schema json.RawMessage, v any) {
	t.Helper()
	compiled, err := compileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	b, err := marshalEmptyNils(v) // what the adapter writes
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err := compiled.Validate(inst); err != nil {
		t.Errorf("%s does not conform to %s: %v", b, schema, err)
	}
}

type (
	quotedArgs struct {
		I int     `json:"i,string"`
		F float64 `json:"f,string,omitempty"`
		B *bool   `json:"b,string,omitempty"`
		N int8    `json:"n"`
	}
	quotedStringArgs struct {
		S string `json:"s,string"`
	}
)

// The ",string" option: invopop publishes the field as a string, and
// encoding/json reads the number or boolean inside it. When another field
// fails, the quoted fields that are right are not blamed, and a wrong one
// is named.
func TestQuotedFields(t *testing.T) {
	c := mustCommand[quotedArgs](t)
	cases := []struct {
		raw  string
		want []FieldError // nil: decodes
	}{
		{`{"i":"1","n":1}`, nil},
		{`{"i":"1","f":"1.5","b":"true","n":1}`, nil},
		{`{"i":"1","f":"1.5","b":"true","n":300}`, []FieldError{{Field: "n", Message: "must be between -128 and 127"}}},
		{`{"i":"x","n":1}`, []FieldError{{Field: "i", Message: "must be an integer written as a string"}}},
		{`{"i":"1","b":"yes","n":300}`, []FieldError{
			{Field: "b", Message: "must be true or false written as a string"},
			{Field: "n", Message: "must be between -128 and 127"},
		}},
	}
	for _, tc := range cases {
		wantDecodeErrors(t, c, tc.raw, tc.want)
	}
	// On a string field, ",string" makes encoding/json want a JSON string
	// inside the string ("\"abc\""), which the published schema cannot say:
	// every plain string an agent or a read sends is refused.
	_, err := newCommand[quotedStringArgs, any]("app", "cmd", "", true, nil)
	want := `command "cmd": arguments: property "s" of adapter.quotedStringArgs (field S): the ",string" option on a string makes encoding/json want a quoted JSON string inside the string, which the schema cannot say`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

type bytesArgs struct {
	Data []byte `json:"data"`
}

// []byte is base64 text in JSON, published as a string: a value that is
// no base64 is not said to need to be a list, on a tools/call or a read.
func TestBytesAreBase64(t *testing.T) {
	c := mustCommand[bytesArgs](t)
	if got, err := c.decode([]byte(`{"data":"aGk="}`)); err != nil || string(got.(bytesArgs).Data) != "hi" {
		t.Errorf("aGk=: %v %v", got, err)
	}
	want := []FieldError{{Field: "data", Message: "must be base64 text"}}
	_, err := c.decode([]byte(`{"data":"!!"}`))
	if err == nil || !slices.Equal(asValidationError(err).Errors, want) {
		t.Errorf("tools/call: %v, want %v", err, want)
	}
	values, perr := c.tmpl.parse("app://cmd/!!")
	if perr != nil {
		t.Fatal(perr)
	}
	raw, err := c.argsFromURI(values)
	if err == nil {
		_, err = c.decode(raw)
	}
	if err == nil || !slices.Equal(asValidationError(err).Errors, want) {
		t.Errorf("read: %v, want %v", err, want)
	}
}

type (
	OutMeta struct {
		Version int `json:"version"`
	}
	outEmbedsPointer struct {
		*OutMeta
		Name string `json:"name"`
	}
	// outMeta is unexported: encoding/json cannot set it through a nil
	// pointer when decoding, but writes its fields like OutMeta's.
	outMeta struct {
		Version int `json:"version"`
	}
	outEmbedsUnexportedPointer struct {
		*outMeta
		Name string `json:"name"`
	}
	outNumbers struct {
		N     json.Number   `json:"n"`
		P     *json.Number  `json:"p"`
		ByInt map[int]*int  `json:"by_int"`
		ByU8  map[uint8]int `json:"by_u8"`
		Ns    []json.Number `json:"ns"`
	}
	// outMoney writes itself as text, though it has fields.
	outMoney struct {
		Cents    int64
		Currency string
	}
	// outLevel writes itself as its name, though it is an integer.
	outLevel   int
	outSelfish struct {
		Price  outMoney   `json:"price"`
		Prices []outMoney `json:"prices"`
		Level  outLevel   `json:"level"`
	}
)

func (m outMoney) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%d %s", m.Cents, m.Currency))
}

func (l outLevel) MarshalJSON() ([]byte, error) {
	return json.Marshal([]string{"low", "high"}[l])
}

// docs/commands.md: the output schema holds every result: "every result
// conforms". encoding/json leaves out the fields of a nil embedded
// pointer, writes a json.Number as a number and a negative integer key as
// "-1", writes null for a nil pointer inside an integer-keyed map, and
// writes what MarshalJSON says for a type that has it, fields or none.
func TestOutputSchemaHoldsWhatGoWrites(t *testing.T) {
	one := 1
	p := json.Number("2.5")
	cases := []struct {
		name string
		v    any
	}{
		{"nil embedded pointer", outEmbedsPointer{Name: "a"}},
		{"set embedded pointer", outEmbedsPointer{OutMeta: &OutMeta{Version: 2}, Name: "a"}},
		{"nil embedded unexported pointer", outEmbedsUnexportedPointer{Name: "a"}},
		{"set embedded unexported pointer", outEmbedsUnexportedPointer{outMeta: &outMeta{Version: 2}, Name: "a"}},
		{"numbers and integer keys", outNumbers{N: "12345678901234567890", P: &p, ByInt: map[int]*int{-1: &one, 2: nil}, ByU8: map[uint8]int{7: 1}, Ns: []json.Number{"1"}}},
		{"nils", outNumbers{N: "0"}},
		{"self-encoding fields", outSelfish{Price: outMoney{1250, "EUR"}, Prices: []outMoney{{1, "EUR"}}, Level: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ok, err := outputSchema(reflect.TypeOf(tc.v))
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			checkSchema(t, s, tc.v)
		})
	}
	// Where invopop and encoding/json disagree on the fields (see
	// checkFields), there is no schema to publish that holds.
	for _, v := range []any{embedTie{}, embedDeeperLast{Name: 1}, urlArgs{}} {
		if s, ok, err := outputSchema(reflect.TypeOf(v)); ok || err != nil {
			t.Errorf("%T: output schema %s (%v), want none", v, s, err)
		}
	}
}

type (
	nullableInner struct {
		N int    `json:"n" jsonschema:"minimum=1"`
		S string `json:"s,omitempty"`
	}
	nullableStructArgs struct {
		M *nullableInner `json:"m,omitempty" jsonschema:"nullable"`
		P *int           `json:"p,omitempty" jsonschema:"nullable,minimum=1"`
	}
)

// " or null" is said of the value that may be null, not of what is wrong
// inside it: the field n of a nullable struct m is not nullable itself.
func TestOrNullIsSaidOfTheNullableValueOnly(t *testing.T) {
	c := mustCommand[nullableStructArgs](t)
	cases := []struct {
		raw  string
		want []FieldError
	}{
		{`{"m":{}}`, []FieldError{{Field: "n", Message: "is required"}}},
		{`{"m":{"n":"x"}}`, []FieldError{{Field: "n", Message: "must be an integer"}}},
		{`{"m":{"n":0}}`, []FieldError{{Field: "n", Message: "must be at least 1"}}},
		{`{"m":{"n":1,"x":1}}`, []FieldError{{Field: "x", Message: "is not an argument of this command"}}},
		{`{"m":1}`, []FieldError{{Field: "m", Message: "must be an object or null"}}},
		{`{"p":0}`, []FieldError{{Field: "p", Message: "must be at least 1 or null"}}},
		{`{"p":"x"}`, []FieldError{{Field: "p", Message: "must be an integer or null"}}},
	}
	for _, tc := range cases {
		wantDecodeErrors(t, c, tc.raw, tc.want)
	}
}

type (
	tagMinOnString struct {
		S string `json:"s" jsonschema:"minimum=1"`
	}
	tagEnumNotInt struct {
		L int `json:"l" jsonschema:"enum=1,enum=high"`
	}
	tagEnumOnBool struct {
		B bool `json:"b" jsonschema:"enum=true"`
	}
	tagBadNumber struct {
		N int `json:"n" jsonschema:"maximum=1e3x"`
	}
	tagLengthOnInt struct {
		Inner struct {
			N *int `json:"n,omitempty" jsonschema:"nullable,maxLength=3"`
		} `json:"inner"`
	}
	// Accepted: each keyword lands in the schema.
	tagsThatApply struct {
		S    string    `json:"s" jsonschema:"minLength=1,maxLength=9,pattern=^[a-z@.]{1\\,9}$,format=email,enum=a@b.c,enum=d@e.f"`
		N    *float64  `json:"n,omitempty" jsonschema:"nullable,minimum=0,maximum=1.5,exclusiveMaximum=2,multipleOf=0.5,enum=1.50,enum=0"`
		L    []int     `json:"l" jsonschema:"minItems=1,maxItems=3,uniqueItems=true,minimum=1"`
		Tags []string  `json:"tags,omitempty" jsonschema:"pattern=^[a-z]+$,maxLength=5"`
		Dir  direction `json:"dir,omitempty" jsonschema:"description=asc or desc"`
	}
)

// A jsonschema tag whose keyword invopop drops (it does not apply to the
// field's type, or its value does not parse) would be neither published nor
// enforced, though whoever wrote it relies on it: the declaration is
// refused, naming the command, the property and the keyword.
func TestTagKeywordsThatWouldBeDropped(t *testing.T) {
	refused := []struct {
		name string
		decl func(scheme, name, description string, live bool, opts []CommandOption) (*command, error)
		want string
	}{
		{"minimum on a string", newCommand[tagMinOnString, any], `command "cmd": arguments: property "s" of adapter.tagMinOnString (field S): its jsonschema tag "minimum=1" does not apply to a value of type string`},
		{"enum value not an integer", newCommand[tagEnumNotInt, any], `command "cmd": arguments: property "l" of adapter.tagEnumNotInt (field L): its jsonschema tag "enum=high" does not apply to a value of type int`},
		{"enum on a boolean", newCommand[tagEnumOnBool, any], `command "cmd": arguments: property "b" of adapter.tagEnumOnBool (field B): its jsonschema tag "enum=true" does not apply`},
		{"bound that is no number", newCommand[tagBadNumber, any], `command "cmd": arguments: property "n" of adapter.tagBadNumber (field N): its jsonschema tag "maximum=1e3x" does not apply`},
		{"length on a nullable integer, one level down", newCommand[tagLengthOnInt, any], `command "cmd": arguments: property "inner" of adapter.tagLengthOnInt: property "n" of struct`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.decl("app", "cmd", "", true, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
	c := mustCommand[tagsThatApply](t)
	if _, err := c.decode([]byte(`{"s":"a@b.c","n":1.5,"l":[1,2]}`)); err != nil {
		t.Errorf("tagsThatApply: %v", err)
	}
}

type requiredPointerArgs struct {
	P *int    `json:"p" jsonschema:"required"`
	Q *string `json:"q,omitempty"`
}

// docs/commands.md: jsonschema:"required" makes a field that would be
// optional required; a pointer is no exception to the tag.
func TestRequiredTagOnAPointer(t *testing.T) {
	c := mustCommand[requiredPointerArgs](t)
	_, err := c.decode([]byte(`{}`))
	want := []FieldError{{Field: "p", Message: "is required"}}
	if err == nil || !slices.Equal(asValidationError(err).Errors, want) {
		t.Errorf("{}: %v, want %v", err, want)
	}
	if c.tmpl == nil || c.tmpl.raw != "app://cmd/{p}{?q}" {
		t.Errorf("template %+v, want p in the path", c.tmpl)
	}
}

type goRefusalArgs struct {
	N  json.Number     `json:"n,omitempty"`
	M  map[int8]int    `json:"m,omitempty"`
	MU map[uint]string `json:"mu,omitempty"`
}

// What Go refuses is said in words that do not contradict the published
// schema: a json.Number is published as a number, and a number in a string
// is refused as the schema says; a map with integer keys is an object, so a
// bad key is named rather than the map said to be no object.
func TestGoRefusalsSayWhatIsWanted(t *testing.T) {
	c := mustCommand[goRefusalArgs](t)
	cases := []struct {
		raw  string
		want []FieldError // nil: decodes
	}{
		{`{"n":12.5,"m":{"7":1},"mu":{"300":"x"}}`, nil},
		{`{"n":"12.5"}`, []FieldError{{Field: "n", Message: "must be a number"}}},
		{`{"n":"abc"}`, []FieldError{{Field: "n", Message: "must be a number"}}},
		{`{"m":{"300":1}}`, []FieldError{{Field: "m", Message: "key 300 must be between -128 and 127"}}},
		{`{"mu":{"x":"a","1":"b"}}`, []FieldError{{Field: "mu", Message: "key x must be an integer"}}},
		{`{"mu":{"2":1}}`, []FieldError{{Field: "mu", Message: "key 2 must be a string"}}},
	}
	for _, tc := range cases {
		wantDecodeErrors(t, c, tc.raw, tc.want)
	}
}

type (
	tagTypeIntegerOnString struct {
		S string `json:"s" jsonschema:"type=integer"`
	}
	tagTypeStringOnList struct {
		L []int `json:"l,omitempty" jsonschema:"type=string"`
	}
	tagTypesThatDecode struct {
		F  float64         `json:"f" jsonschema:"type=integer"`
		A  any             `json:"a,omitempty" jsonschema:"type=string"`
		R  json.RawMessage `json:"r,omitempty" jsonschema:"type=object"`
		ID int64           `json:"id,string" jsonschema:"type=string"`
		OK *bool           `json:"ok,string,omitempty" jsonschema:"type=string"`
	}
)

// A jsonschema "type" tag that publishes a type no value of which Go can
// decode into the field makes a command nobody can call with it: refused.
// One whose values Go decodes (an integer into a float64, anything into
// any, a string into a number with json's ",string" option, as people
// write who know that invopop ignores that option) is fine.
func TestTagTypeMustDecode(t *testing.T) {
	for _, decl := range []struct {
		decl func(scheme, name, description string, live bool, opts []CommandOption) (*command, error)
		want string
	}{
		{newCommand[tagTypeIntegerOnString, any], `command "cmd": arguments: property "s" of adapter.tagTypeIntegerOnString (field S): its jsonschema tag "type=integer" publishes a type encoding/json does not decode into string`},
		{newCommand[tagTypeStringOnList, any], `command "cmd": arguments: property "l" of adapter.tagTypeStringOnList (field L): its jsonschema tag "type=string" publishes a type encoding/json does not decode into []int`},
	} {
		if _, err := decl.decl("app", "cmd", "", true, nil); err == nil || err.Error() != decl.want {
			t.Errorf("error %v, want %q", err, decl.want)
		}
	}
	c := mustCommand[tagTypesThatDecode](t)
	got, err := c.decode([]byte(`{"f":2,"a":"x","r":{"k":1},"id":"12","ok":"true"}`))
	if err != nil {
		t.Fatal(err)
	}
	if args := got.(tagTypesThatDecode); args.ID != 12 || args.OK == nil || !*args.OK {
		t.Errorf("decoded %+v, want id 12 and ok true", args)
	}
}

// defaultsArgs decodes itself to give Page a default: its UnmarshalJSON
// reads the same fields, so its schema is still its fields.
type defaultsArgs struct {
	Page int `json:"page,omitempty" jsonschema:"minimum=1"`
}

func (d *defaultsArgs) UnmarshalJSON(b []byte) error {
	type plain defaultsArgs
	p := plain{Page: 1}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*d = defaultsArgs(p)
	return nil
}

type defaultsNested struct {
	D defaultsArgs `json:"d"`
}

// A struct with fields of its own that decodes itself (for defaults, say)
// keeps its fields' schema and its template; only one whose fields Go
// would not see (big.Int) is published as anything.
func TestSelfDecodingStructKeepsItsFields(t *testing.T) {
	c := mustCommand[defaultsArgs](t)
	if c.tmpl == nil || c.tmpl.raw != "app://cmd{?page}" {
		t.Errorf("template %+v (%s %s), want app://cmd{?page}", c.tmpl, c.reason, c.detail)
	}
	if _, err := c.decode([]byte(`{"page":0}`)); err == nil {
		t.Error("page 0 accepted, want minimum=1 held")
	}
	n := mustCommand[defaultsNested](t)
	if n.tmpl == nil || n.tmpl.raw != "app://cmd{?page}" {
		t.Errorf("nested: template %+v (%s %s), want app://cmd{?page}", n.tmpl, n.reason, n.detail)
	}
}

type (
	promotedTime struct {
		time.Time
		ID int `json:"id"`
	}
	promotedNested struct {
		W promotedTime `json:"w"`
	}
	promotedText struct {
		*textID
		N int `json:"n"`
	}
	// ownOverPromoted embeds a type that decodes itself, but declares a
	// decoding method of its own, which encoding/json uses: nothing is
	// promoted.
	ownOverPromoted struct {
		defaultsArgs
		Q string `json:"q"`
	}
)

func (o *ownOverPromoted) UnmarshalJSON(b []byte) error {
	var v struct {
		Page int    `json:"page"`
		Q    string `json:"q"`
	}
	err := json.Unmarshal(b, &v)
	*o = ownOverPromoted{defaultsArgs{Page: cmp.Or(v.Page, 1)}, v.Q}
	return err
}

// Embedding a type that decodes itself (time.Time) promotes its
// UnmarshalJSON: encoding/json then decodes the whole struct as a time,
// while invopop publishes the struct's fields. No call could pass both:
// the declaration is refused, unless the struct declares the method itself.
func TestPromotedDecoderIsRefused(t *testing.T) {
	for _, tc := range []struct {
		decl func(scheme, name, description string, live bool, opts []CommandOption) (*command, error)
		want string
	}{
		{newCommand[promotedTime, any], `command "cmd": arguments: adapter.promotedTime: encoding/json decodes it with the method UnmarshalJSON of its embedded field Time, not field by field as its schema says`},
		{newCommand[promotedNested, any], `command "cmd": arguments: property "w" of adapter.promotedNested: adapter.promotedTime: encoding/json decodes it with the method UnmarshalJSON of its embedded field Time`},
		{newCommand[promotedText, any], `command "cmd": arguments: adapter.promotedText: encoding/json decodes it with the method UnmarshalText of its embedded field textID`},
	} {
		if _, err := tc.decl("app", "cmd", "", true, nil); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("error %v, want one starting %q", err, tc.want)
		}
	}
	// A method of the struct's own shadows the embedded field's: served.
	got, err := mustCommand[ownOverPromoted](t).decode([]byte(`{"q":"x"}`))
	if err != nil || got != (ownOverPromoted{defaultsArgs{Page: 1}, "x"}) {
		t.Errorf("decoded %+v, %v; want page 1, q x", got, err)
	}
}

type (
	// readOnlyLevel reads its name but writes its number: it has no
	// MarshalText.
	readOnlyLevel int
	// addrLevel writes its name only where encoding/json can take its
	// address (a list item), and its number elsewhere (a field of a result).
	addrLevel int
	levelsOut struct {
		R    readOnlyLevel `json:"r"`
		A    addrLevel     `json:"a"`
		List []addrLevel   `json:"list"`
	}
)

func (l *readOnlyLevel) UnmarshalText(b []byte) error { return (*textLevel)(l).UnmarshalText(b) }
func (l *addrLevel) UnmarshalText(b []byte) error     { return (*textLevel)(l).UnmarshalText(b) }
func (l *addrLevel) MarshalText() ([]byte, error)     { return textLevel(*l).MarshalText() }

// The output schema describes what encoding/json writes, which for a type
// that reads itself as text is not always text: without a MarshalText it
// writes its kind, and with one on the pointer only it writes text only
// where the value is addressable.
func TestOutputSchemaOfTextTypes(t *testing.T) {
	s, ok, err := outputSchema(reflect.TypeFor[levelsOut]())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	v := levelsOut{R: 1, A: 1, List: []addrLevel{1}}
	if b, _ := json.Marshal(v); string(b) != `{"r":1,"a":1,"list":["high"]}` {
		t.Fatalf("encoding/json writes %s; the test's premise is wrong", b)
	}
	checkSchema(t, s, v)
	c := mustCommand[levelsOut](t)
	if _, err := c.decode([]byte(`{"r":"high","a":"low","list":["high"]}`)); err != nil {
		t.Error(err)
	}
}

type timeAsDate struct {
	Day time.Time `json:"day" jsonschema:"format=date"`
}

// time.Time decodes RFC 3339 date-times only: published with format
// "date", no value passes both the schema and Go.
func TestTimeWithAnotherFormatIsRefused(t *testing.T) {
	_, err := newCommand[timeAsDate, any]("app", "cmd", "", true, nil)
	want := `command "cmd": arguments: property "day" of adapter.timeAsDate (field Day): its jsonschema tag "format=date" does not fit time.Time, which encoding/json reads as an RFC 3339 date-time only`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

type numberOnInt struct {
	N int64 `json:"n" jsonschema:"type=number"`
}

// A number variable whose Go field holds integers (published as a number
// by a type tag or a JSONSchema method) reads what a tools/call with the
// same value gets: every digit of 9007199254740993, and a refusal of 2.0
// and 2.5, which Go will not put in an int64.
func TestNumberVariableOfAnIntegerField(t *testing.T) {
	c := mustCommand[numberOnInt](t)
	if c.tmpl == nil {
		t.Fatal(c.reason, c.detail)
	}
	for _, n := range []string{"9007199254740993", "-3", "2.0", "2.5", "1e3"} {
		wantReadAsCall(t, c, "n", n)
	}
}

// wantReadAsCall checks that a read of c's URI with the value n of its one
// path variable, named field, gives what a tools/call with n gives: the
// same arguments, or the same error.
func wantReadAsCall(t *testing.T, c *command, field, n string) {
	t.Helper()
	callGot, callErr := c.decode([]byte(`{"` + field + `":` + n + `}`))
	values, err := c.tmpl.parse("app://cmd/" + n)
	if err != nil {
		t.Fatal(err)
	}
	readGot, readErr := any(nil), error(nil)
	raw, readErr := c.argsFromURI(values)
	if readErr == nil {
		readGot, readErr = c.decode(raw)
	}
	if fmt.Sprint(callGot) != fmt.Sprint(readGot) || fmt.Sprint(callErr) != fmt.Sprint(readErr) {
		t.Errorf("%s: tools/call %v %v, read %v %v", n, callGot, callErr, readGot, readErr)
	}
}

type integerOnFloat struct {
	F float64 `json:"f" jsonschema:"type=integer"`
}

// The other way round: an integer schema on a float field takes 2.0 and
// 1e3 from a tools/call (JSON Schema integers, which Go puts in a float64),
// and so from a read.
func TestIntegerVariableOfAFloatField(t *testing.T) {
	c := mustCommand[integerOnFloat](t)
	for _, n := range []string{"2", "2.0", "1e3", "2.5", "-7"} {
		wantReadAsCall(t, c, "f", n)
	}
}

// validTagName agrees with encoding/json on every name of one character
// after "a", asked of json itself through a struct type made for it.
func TestValidTagNameAgreesWithEncodingJSON(t *testing.T) {
	for c := rune(0); c < 0x800; c++ {
		if c == 0 || !utf8.ValidRune(c) {
			continue
		}
		name := "a" + string(c)
		typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[int](), Tag: reflect.StructTag("json:" + strconv.Quote(name))}})
		b, err := json.Marshal(reflect.New(typ).Elem().Interface())
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		_, jsonTakes := obj[name]
		if got := validTagName(name); got != jsonTakes {
			t.Errorf("validTagName(%q) = %v, but encoding/json takes it: %v", name, got, jsonTakes)
		}
	}
}

// Embedding shapes whose leaves are all ints, for asking encoding/json which
// field it writes under each name.
type (
	GFA      struct{ Name, A int }
	GFB      struct{ Name, B int }
	GFTagged struct {
		Name int `json:"Name"`
	}
	GFY struct{ YN int }
	GFX struct {
		GFY
		XN int
	}
	GFP   struct{ GFX }
	GFQ   struct{ GFX }
	GFTie struct {
		GFA
		GFB
	}
	GFTaggedWins struct {
		GFA
		GFTagged
	}
	GFShallow struct {
		GFA
		Name int
	}
	GFTwice struct {
		GFP
		GFQ
		Top int
	}
	GFPointer struct {
		*GFA
		Own GFB `json:"own"`
	}
)

// goFields agrees with encoding/json on which field each name writes and
// reads, asked of json itself: every int leaf set to a number of its own.
func TestGoFieldsAgreesWithEncodingJSON(t *testing.T) {
	for _, v := range []any{&GFTie{}, &GFTaggedWins{}, &GFShallow{}, &GFTwice{}, &GFPointer{}} {
		rv := reflect.ValueOf(v).Elem()
		marks := map[int][]int{} // mark -> index path
		next := 1
		var fill func(v reflect.Value, index []int)
		fill = func(v reflect.Value, index []int) {
			for i := range v.NumField() {
				f := v.Field(i)
				path := append(slices.Clip(index), i)
				if f.Kind() == reflect.Pointer {
					f.Set(reflect.New(f.Type().Elem()))
					f = f.Elem()
				}
				switch f.Kind() {
				case reflect.Int:
					f.SetInt(int64(next))
					marks[next] = path
					next++
				case reflect.Struct:
					fill(f, path)
				}
			}
		}
		fill(rv, nil)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var written map[string]any
		if err := json.Unmarshal(b, &written); err != nil {
			t.Fatal(err)
		}
		got := map[string][]int{}
		for _, f := range goFields(rv.Type()) {
			got[f.name] = f.index
		}
		want := map[string][]int{}
		for name, mark := range written {
			if m, ok := mark.(float64); ok {
				want[name] = marks[int(m)]
			} else {
				want[name] = got[name] // an object: a tagged struct, checked by name only
			}
		}
		if !maps.EqualFunc(got, want, slices.Equal[[]int]) {
			t.Errorf("%T: goFields gives %v, encoding/json writes %s", v, got, b)
		}
	}
}

// wantDecodeErrors checks that c decodes raw with the field errors want
// (nil: it decodes).
func wantDecodeErrors(t *testing.T, c *command, raw string, want []FieldError) {
	t.Helper()
	_, err := c.decode([]byte(raw))
	var got []FieldError
	if err != nil {
		got = asValidationError(err).Errors
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: %v, want %v", raw, got, want)
	}
}

type integerOnFloatBounded struct {
	F float64 `json:"f" jsonschema:"type=integer,maximum=9007199254740992"`
}

// An integer variable of a float field converts as a number, which Go
// rounds: the read must still hold the number as written to the schema, as
// a tools/call is held: 2.0000000000000001 is no integer, and
// 9007199254740993 is over the maximum, though both round to ones that pass.
func TestIntegerVariableOfAFloatFieldAsWritten(t *testing.T) {
	c := mustCommand[integerOnFloatBounded](t)
	for _, n := range []string{"2.0000000000000001", "9007199254740993", "2", "9007199254740992"} {
		wantReadAsCall(t, c, "f", n)
	}
}
