package adapter

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/mark3labs/mcp-go/server"
)

// hasSessions reports whether srv already has client sessions, that is,
// whether it serves. Wrap writes hooks and options without locks, as
// mcp-go's own options do, so it must run before any request does; mcp-go
// offers no way to ask, so this reads the server's session map. When the
// field is not where mcp-go v1.2.x keeps it, it reports false: Wrap then
// trusts its documentation to be followed.
func hasSessions(srv *server.MCPServer) (serving bool) {
	defer func() {
		if recover() != nil {
			serving = false
		}
	}()
	f := reflect.ValueOf(srv).Elem().FieldByName("sessions")
	if !f.IsValid() || f.Type() != reflect.TypeFor[sync.Map]() || !f.CanAddr() {
		return false
	}
	sessions := (*sync.Map)(unsafe.Pointer(f.UnsafeAddr()))
	sessions.Range(func(any, any) bool {
		serving = true
		return false
	})
	return serving
}
