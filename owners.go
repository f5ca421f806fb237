package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Sessions that belong to their user.
//
// A Streamable HTTP session (before protocol 2026-07-28) is named by its
// Mcp-Session-Id alone, and anyone who learns the ID could use it: read
// with the session's subscriptions, unsubscribe them, open its GET stream
// and hear its notifications, end it. With WithIdentity, HTTPHandler
// remembers the identity of the request that opened each session (the
// initialize whose answer carried the new ID), and answers every later
// request that names the session from another identity as it would a
// session it does not know, before mcp-go sees it. The owners are kept
// until the session unregisters.

// sessionOwners are the identities that opened the sessions HTTPHandler
// saw opened, by session ID.
type sessionOwners struct {
	mu sync.Mutex
	m  map[string]string
	// refused counts the requests answered as for an unknown session
	// because they named a session of another identity.
	refused atomic.Uint64
}

func (o *sessionOwners) bind(sessionID, identity string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[string]string)
	}
	o.m[sessionID] = identity
}

// owner returns the identity that opened session sessionID; bound is
// false when HTTPHandler did not see it opened.
func (o *sessionOwners) owner(sessionID string) (identity string, bound bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	identity, bound = o.m[sessionID]
	return identity, bound
}

func (o *sessionOwners) forget(sessionID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, sessionID)
}

// identityOf asks the identity function (WithIdentity) who ctx's request
// is: "" for no one. ok is false when the function panicked (logged).
func (a *Adapter) identityOf(ctx context.Context) (identity string, ok bool) {
	var err error
	func() {
		defer recoverUserPanic(a.logger, "", "asking the identity function", &err)
		identity = a.cfg.identity(ctx)
	}()
	return identity, err == nil
}

// errNoIdentity answers a request whose identity could not be decided:
// the identity function panicked.
var errNoIdentity = &rpcError{Code: mcp.INTERNAL_ERROR, Message: "internal error: the request's identity could not be decided"}

// requestIdentity is the identity of r, for the session checks; ok is
// false, and r answered, when it could not be decided.
func (a *Adapter) requestIdentity(w http.ResponseWriter, r *http.Request) (identity string, ok bool) {
	if identity, ok = a.identityOf(r.Context()); !ok {
		writeHTTPError(w, http.StatusInternalServerError, errNoIdentity)
	}
	return identity, ok
}

// admitSession answers r, and returns false, when r names a session that
// another identity opened; body is a POST's. A request of protocol
// 2026-07-28 is let through: the protocol has no sessions, and mcp-go
// ignores the session ID it may carry. So is an initialize, for which
// mcp-go opens a session of its own whatever ID the request carries.
func (a *Adapter) admitSession(w http.ResponseWriter, r *http.Request, identity string, body []byte) bool {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return true
	}
	owner, bound := a.owners.owner(id)
	if !bound || owner == identity || body != nil && isInitialize(body) {
		return true
	}
	a.owners.refused.Add(1)
	a.logger.WarnContext(r.Context(), "adapter: a request named a session that another identity opened; answered as an unknown session",
		"method", r.Method, "remote", r.RemoteAddr, "identified", identity != "", "owner_identified", owner != "")
	answerUnknownSession(w)
	return false
}

// answerUnknownSession answers as mcp-go answers a request whose session
// ID it does not know, byte for byte: 404, "Invalid session ID" in plain
// text.
func answerUnknownSession(w http.ResponseWriter) {
	http.Error(w, "Invalid session ID", http.StatusNotFound)
}

// isInitialize reports whether body is an initialize request. The byte
// test spares decoding every other body; JSON escapes may spell the
// method otherwise, and a body with one is decoded.
func isInitialize(body []byte) bool {
	if !bytes.Contains(body, []byte(mcp.MethodInitialize)) && bytes.IndexByte(body, '\\') < 0 {
		return false
	}
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == string(mcp.MethodInitialize)
}

// bindOpenedSession makes the session a response opens, the Mcp-Session-Id
// that header carries and the request did not, identity's.
func (a *Adapter) bindOpenedSession(header http.Header, requested, identity string) {
	if id := header.Get(server.HeaderKeySessionID); id != "" && id != requested {
		a.owners.bind(id, identity)
	}
}
