package adapter

// Reason says why a command has no URI template: a stable code, for
// programs (Inspect's JSON, tests, alerts), whose Description is the
// sentence for people. The zero value means the command has a template.
type Reason string

// The reasons a command is a tool only. Every one is decided by the
// command's declaration and its published input schema, except
// ReasonNotGranted, which depends on the session.
const (
	ReasonNotLive           Reason = "not_live"
	ReasonNeedsConfirmation Reason = "needs_confirmation"
	ReasonNotGranted        Reason = "not_granted"
	ReasonNestedStruct      Reason = "nested_struct"
	ReasonList              Reason = "list"
	ReasonMap               Reason = "map"
	ReasonAny               Reason = "any"
	ReasonRawJSON           Reason = "raw_json"
	ReasonNotScalar         Reason = "not_scalar"
	ReasonDuplicateVariable Reason = "duplicate_variable"
	ReasonVariableName      Reason = "variable_name"
)

var reasonDescriptions = map[Reason]string{
	ReasonNotLive:           "not live: a command that may write is a tool only",
	ReasonNeedsConfirmation: "needs confirmation: a tool only, never a resource",
	ReasonNotGranted:        "not granted to this session",
	ReasonNestedStruct:      "an argument is a struct nested more than one level deep",
	ReasonList:              "an argument is a list",
	ReasonMap:               "an argument is a map",
	ReasonAny:               "an argument is an interface (any)",
	ReasonRawJSON:           "an argument is raw JSON",
	ReasonNotScalar:         "an argument's schema is not a scalar (string, integer, number, boolean or enum of strings)",
	ReasonDuplicateVariable: "two arguments flatten to the same variable name",
	ReasonVariableName:      "an argument's name is not a valid URI template variable name",
}

// Description says what the reason means, in a sentence: "an argument is a
// list". It is "" for the zero Reason, and the code itself for a code this
// version does not know.
func (r Reason) Description() string {
	if d, ok := reasonDescriptions[r]; ok {
		return d
	}
	return string(r)
}
