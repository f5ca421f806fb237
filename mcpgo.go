package adapter

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/mark3labs/mcp-go/server"
)

// The three places where the adapter reads mcp-go's internals, because mcp-go
// offers no way to ask. Each reports whether it could read (ok), so that an
// mcp-go upgrade that moves a field is never silent: Wrap logs a warning and
// falls back, and TestMCPGoInternals fails until this file follows the move.

// hasSessions reports whether srv already has client sessions, that is,
// whether it serves. Wrap writes hooks and options without locks, as
// mcp-go's own options do, so it must run before any request does. It reads
// the server's session map (a sync.Map in mcp-go v1.2.x).
func hasSessions(srv *server.MCPServer) (serving, ok bool) {
	defer func() {
		if recover() != nil {
			serving, ok = false, false
		}
	}()
	f := reflect.ValueOf(srv).Elem().FieldByName("sessions")
	if !f.IsValid() || f.Type() != reflect.TypeFor[sync.Map]() || !f.CanAddr() {
		return false, false
	}
	sessions := (*sync.Map)(unsafe.Pointer(f.UnsafeAddr()))
	sessions.Range(func(any, any) bool {
		serving = true
		return false
	})
	return serving, true
}

// resourcesListChanged reads the listChanged flag of srv's resources
// capability. WithResourceCapabilities, which Wrap calls to add subscribe,
// replaces the whole capability and mcp-go has no getter, so Wrap reads the
// flag first to keep it.
func resourcesListChanged(srv *server.MCPServer) (listChanged, ok bool) {
	defer func() {
		if recover() != nil {
			listChanged, ok = false, false
		}
	}()
	caps := reflect.ValueOf(srv).Elem().FieldByName("capabilities")
	if !caps.IsValid() {
		return false, false
	}
	res := caps.FieldByName("resources")
	if !res.IsValid() || res.Kind() != reflect.Pointer {
		return false, false
	}
	if res.IsNil() {
		return false, true // no resources capability yet
	}
	f := res.Elem().FieldByName("listChanged")
	if !f.IsValid() || f.Kind() != reflect.Bool {
		return false, false
	}
	return f.Bool(), true
}

// wrappedAlready reports whether Wrap has wrapped srv: whether its resource
// completion provider is an adapter's. A second adapter on one server would
// take over the provider and answer not-found for the first's reads and
// subscriptions (its hooks run too, and know none of the first's
// commands). The server carries the mark itself, so no registry of servers
// is kept.
func wrappedAlready(srv *server.MCPServer) (wrapped, ok bool) {
	defer func() {
		if recover() != nil {
			wrapped, ok = false, false
		}
	}()
	f := reflect.ValueOf(srv).Elem().FieldByName("resourceCompletionProvider")
	if !f.IsValid() || f.Kind() != reflect.Interface {
		return false, false
	}
	if f.IsNil() {
		return false, true
	}
	return f.Elem().Type() == reflect.TypeFor[completionProvider](), true
}
