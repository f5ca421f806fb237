package adapter

import (
	"strings"
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
		{"in a list", newCommand[embedInList, any], `command "cmd": arguments: property "Name" of adapter.embedTie`},
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
