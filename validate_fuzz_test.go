package adapter

import (
	"encoding/json"
	"errors"
	"testing"
)

// fuzzArgs has a keyword of each kind on scalars (a template) and lists
// beside it in fuzzListArgs (a tool only).
type fuzzArgs struct {
	ID    int64    `json:"id" jsonschema:"minimum=1"`
	Page  *int     `json:"page,omitempty" jsonschema:"minimum=1,maximum=100"`
	Ratio *float32 `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,multipleOf=0.25"`
	Code  string   `json:"code,omitempty" jsonschema:"minLength=2,maxLength=4,pattern=^[A-Z]+$"`
	Day   string   `json:"day,omitempty" jsonschema:"format=date"`
	Mail  string   `json:"mail,omitempty" jsonschema:"format=email"`
	Sort  *string  `json:"sort,omitempty" jsonschema:"nullable,enum=name,enum=created_at"`
	Tiny  *int8    `json:"tiny,omitempty" jsonschema:"nullable,maximum=100"`
	Flag  bool     `json:"flag,omitempty"`
	Range struct {
		Lo *uint8 `json:"lo,omitempty" jsonschema:"maximum=200"`
		Hi *uint8 `json:"hi,omitempty"`
	} `json:"range,omitempty"`
}

// Validate trusts the schema: it would panic on an id below 1, which the
// schema refuses, so it must never see one, except on arguments with
// failed fields left out, where a panic is taken as nothing to add.
func (a fuzzArgs) Validate() error {
	if a.ID < 1 {
		panic("Validate ran on an id the schema refuses")
	}
	var errs ValidationError
	if a.Range.Lo != nil && a.Range.Hi != nil && *a.Range.Hi < *a.Range.Lo {
		errs.Add("hi", "must not be less than lo")
	}
	if a.Code == "ZZ" {
		errs.Add("code", "is reserved")
		errs.Add("code", "is reserved twice") // merged, never listed twice
	}
	return errs.Err()
}

type fuzzListArgs struct {
	IDs  []int8            `json:"ids" jsonschema:"minItems=1,maxItems=4,uniqueItems=true,minimum=1"`
	Tags map[string]string `json:"tags,omitempty"`
	Rows []struct {
		N int `json:"n" jsonschema:"minimum=0"`
	} `json:"rows,omitempty"`
}

// FuzzCheckArguments feeds the read path (a URI parsed, converted and
// checked: argsFromURI) and the tools/call path (arbitrary JSON arguments,
// canonicalArguments and decode) arbitrary input. Neither may panic, and a
// failure is a *ValidationError that names each field at most once, with a
// message, and at most maxFieldErrors of them plus a count.
func FuzzCheckArguments(f *testing.F) {
	read := mustFuzzCommand[fuzzArgs](f)
	if read.tmpl == nil {
		f.Fatalf("fuzzArgs has no template: %s %s", read.reason, read.detail)
	}
	list := mustFuzzCommand[fuzzListArgs](f)
	f.Fuzz(func(t *testing.T, uri string, args []byte) {
		if values, err := read.tmpl.parse(uri); err == nil {
			raw, err := read.argsFromURI(values)
			if err == nil {
				_, err = read.decode(raw)
			}
			checkFieldErrors(t, "read "+uri, err)
		}
		for _, c := range []*command{read, list} {
			raw, err := canonicalArguments(json.RawMessage(args))
			if err == nil {
				_, err = c.decode(raw)
			}
			checkFieldErrors(t, "tools/call "+string(args), err)
		}
	})
}

func mustFuzzCommand[A any](f *testing.F) *command {
	c, err := newCommand[A, any]("app", "fz", "", true, nil)
	if err != nil {
		f.Fatal(err)
	}
	return c
}

func checkFieldErrors(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Errors) == 0 {
		t.Fatalf("%s: %T %v, want a *ValidationError with field errors", what, err, err)
	}
	if len(verr.Errors) > maxFieldErrors+1 {
		t.Fatalf("%s: %d field errors, want at most %d", what, len(verr.Errors), maxFieldErrors+1)
	}
	seen := map[string]bool{}
	for _, fe := range verr.Errors {
		if seen[fe.Field] {
			t.Fatalf("%s: field %q reported twice: %v", what, fe.Field, verr)
		}
		seen[fe.Field] = true
		if fe.Message == "" {
			t.Fatalf("%s: field %q without a message", what, fe.Field)
		}
	}
}
