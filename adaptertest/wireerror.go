package adaptertest

import (
	"encoding/json"
	"fmt"

	"github.com/mcplive/adapter"
)

// WireError is a JSON-RPC error the server answered, exactly as the
// adapter's HTTP and stdio edges put it on the wire.
//
// For a read of an expanded URI (see docs/reading.md):
//   - arguments that do not convert or validate: Code -32602, Data
//     {"errors":[{"field":…,"message":…},…]} (see FieldErrors);
//   - resource not found (no such command, a malformed URI, a command not
//     granted, adapter.ErrNotFound from the command): Code -32002 on
//     protocol 2025-11-25 and -32602 on 2026-07-28, Data {"uri":…}.
type WireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the code, the message and the data, if any.
func (e *WireError) Error() string {
	if len(e.Data) == 0 {
		return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("JSON-RPC error %d: %s (data: %s)", e.Code, e.Message, e.Data)
}

// FieldErrors returns the field errors in Data ({"errors": [...]}), nil when
// there are none.
func (e *WireError) FieldErrors() []adapter.FieldError {
	var data struct {
		Errors []adapter.FieldError `json:"errors"`
	}
	if json.Unmarshal(e.Data, &data) != nil {
		return nil
	}
	return data.Errors
}

// URI returns the "uri" of Data, as a resource-not-found error carries it,
// "" when there is none.
func (e *WireError) URI() string {
	var data struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(e.Data, &data) != nil {
		return ""
	}
	return data.URI
}
