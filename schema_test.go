package adapter

import (
	"testing"
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
