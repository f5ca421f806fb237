package adapter

import (
	"encoding/json"
	"strings"
	"testing"
)

type (
	encItem struct {
		Tags []string          `json:"tags"`
		Meta map[string]string `json:"meta,omitempty"`
		Next *encItem          `json:"next"`
	}
	encSelf []int // writes itself: its nil stays what its method says
	encAll  struct {
		List    []encItem           `json:"list"`
		ByName  map[string][]int    `json:"by_name"`
		ByID    map[int][]string    `json:"by_id"`
		Bytes   []byte              `json:"bytes"`
		Ptr     *[]int              `json:"ptr"`
		Fixed   [2][]int            `json:"fixed"`
		Any     any                 `json:"any"`
		Raw     json.RawMessage     `json:"raw"`
		Self    encSelf             `json:"self"`
		Quoted  int                 `json:"quoted,string"`
		Escaped []int               `json:"a\u00e9<b"`
		Text    string              `json:"text"`
		Nested  map[string]*encItem `json:"nested"`
		encEmbedded
	}
	encEmbedded struct {
		Promoted []int `json:"promoted"`
	}
)

func (s encSelf) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte(`"none"`), nil
	}
	return json.Marshal([]int(s))
}

// marshalEmptyNils writes what json.Marshal writes, but [] and {} (and "" for
// a []byte) where a nil slice or map made it write null, at any depth; a
// nil pointer (and a pointer to a nil slice, which json writes alike), a
// null inside an interface or a raw message, and whatever a type with a
// MarshalJSON method writes stay as they are.
func TestMarshalEmptyNils(t *testing.T) {
	loop := &encItem{Tags: []string{"a"}}
	loop.Next = &encItem{}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"all nil", encAll{},
			`{"list":[],"by_name":{},"by_id":{},"bytes":"","ptr":null,"fixed":[[],[]],"any":null,"raw":null,"self":"none","quoted":"0","aé\u003cb":[],"text":"","nested":{},"promoted":[]}`},
		{"nil inside", encAll{
			List:   []encItem{{}, {Tags: []string{"x"}, Next: &encItem{}}},
			ByName: map[string][]int{"null": nil},
			ByID:   map[int][]string{-1: nil},
			Ptr:    new([]int),
			Fixed:  [2][]int{{1}, nil},
			Any:    []int(nil),
			Raw:    json.RawMessage(`{"n":null}`),
			Text:   "null, [null]",
			Nested: map[string]*encItem{"a": nil, "b": {}},
		},
			`{"list":[{"tags":[],"next":null},{"tags":["x"],"next":{"tags":[],"next":null}}],"by_name":{"null":[]},"by_id":{"-1":[]},"bytes":"","ptr":null,"fixed":[[1],[]],"any":null,"raw":{"n":null},"self":"none","quoted":"0","aé\u003cb":[],"text":"null, [null]","nested":{"a":null,"b":{"tags":[],"next":null}},"promoted":[]}`},
		{"a list", []encItem{{}, {Meta: map[string]string{}}}, `[{"tags":[],"next":null},{"tags":[],"next":null}]`},
		{"a nil list", []int(nil), `[]`},
		{"a nil map", map[string]int(nil), `{}`},
		{"a nil pointer", (*encItem)(nil), `null`},
		{"a recursive value", loop, `{"tags":["a"],"next":{"tags":[],"next":null}}`},
		{"no null", encItem{Tags: []string{}, Next: nil}, `{"tags":[],"next":null}`},
		{"nothing to fill", struct{ P *int }{}, `{"P":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := marshalEmptyNils(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("marshalEmptyNils:\n got %s\nwant %s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("not JSON: %s", got)
			}
		})
	}
	if _, err := marshalEmptyNils(make(chan int)); err == nil || !strings.Contains(err.Error(), "unsupported type") {
		t.Errorf("a channel: %v, want json's error", err)
	}
}

// BenchmarkMarshalEmptyNils is what writing a result costs beside json.Marshal:
// a page of orders whose optional fields are nil pointers (null, walked
// and kept) and one whose list is nil (filled).
func BenchmarkMarshalEmptyNils(b *testing.B) {
	type order struct {
		ID     int64   `json:"id"`
		Note   *string `json:"note"`
		Amount int64   `json:"amount_cents"`
		Tags   []string
	}
	type page struct {
		Orders []order `json:"orders"`
		Total  int     `json:"total"`
		Next   *int    `json:"next"`
	}
	full := page{Total: 20}
	for i := range 20 {
		full.Orders = append(full.Orders, order{ID: int64(i), Amount: 1250, Tags: []string{"a"}})
	}
	for _, bc := range []struct {
		name string
		v    any
	}{{"page with nulls", full}, {"empty page", page{}}} {
		b.Run(bc.name+"/json.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				json.Marshal(bc.v)
			}
		})
		b.Run(bc.name+"/marshalEmptyNils", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				marshalEmptyNils(bc.v)
			}
		})
	}
}
