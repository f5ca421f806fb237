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

// ErrUnknownCommand is the error of Adapter.Call for a name no command was
// declared with.
var ErrUnknownCommand = errors.New("no such command")

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

// Add records that field is wrong, saying why. Validate methods collect
// every problem this way and return Err:
//
//	func (a PageArgs) Validate() error {
//		var errs adapter.ValidationError
//		if a.Page < 1 {
//			errs.Add("page", "must be at least 1")
//		}
//		return errs.Err()
//	}
func (e *ValidationError) Add(field, message string) {
	e.Errors = append(e.Errors, FieldError{Field: field, Message: message})
}

// Err returns e when it holds any field error and nil otherwise, so that a
// Validate method can end with return errs.Err(). (Returning e itself when
// empty would be a non-nil error interface holding no errors.)
func (e *ValidationError) Err() error {
	if e == nil || len(e.Errors) == 0 {
		return nil
	}
	return e
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
	var pfe *FieldError
	if errors.As(err, &pfe) && pfe != nil {
		return &ValidationError{Errors: []FieldError{*pfe}}
	}
	return &ValidationError{Errors: []FieldError{{Message: err.Error()}}}
}
