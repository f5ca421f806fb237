package adapter

import (
	"errors"
	"strings"
)

// ErrNotFound is the error a live command returns (wrapped or not) when the
// thing its arguments name does not exist. A resources/read then answers
// resource-not-found for the protocol era, exactly as for a URI no command
// owns, and a tools/call answers an isError result.
var ErrNotFound = errors.New("not found")

// FieldError is one thing wrong with one argument.
type FieldError struct {
	// Field is the argument's name as the URI and the JSON schema spell it,
	// "" when the error concerns the arguments as a whole.
	Field string `json:"field"`
	// Message says what is wrong, for a person or an agent to read.
	Message string `json:"message"`
}

func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// ValidationError lists everything wrong with a command's arguments: the
// conversion of a URI's strings, the decoding of a tools/call's JSON, or the
// command's own Validate method. On the wire it is JSON-RPC error -32602
// (invalid params) with data {"errors": [{"field": …, "message": …}, …]}.
//
// A Validate method may return a *ValidationError to name several fields;
// any other error it returns becomes one FieldError with an empty Field.
type ValidationError struct {
	Errors []FieldError `json:"errors"`
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments: ")
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// asValidationError turns what Validate returned into a *ValidationError.
func asValidationError(err error) *ValidationError {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	var fe FieldError
	if errors.As(err, &fe) {
		return &ValidationError{Errors: []FieldError{fe}}
	}
	return &ValidationError{Errors: []FieldError{{Message: err.Error()}}}
}
