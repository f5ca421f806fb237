package main

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// sessionIDs is the example's server.SessionIdManager: it hands out
// unguessable session IDs and knows which are live, so that a request
// carrying an ID the server never issued, or one already deleted or expired,
// is answered 404 and runs nothing. (mcp-go's default manager accepts any
// well-formed ID; its WithStateful manager remembers every ended session
// for ever, which a long-running server cannot afford.) Memory is bounded by
// the live sessions: DELETE and the idle sweeper (WithSessionIdleTTL) end
// them through Terminate.
type sessionIDs struct {
	mu   sync.Mutex
	live map[string]struct{}
}

func newSessionIDs() *sessionIDs { return &sessionIDs{live: make(map[string]struct{})} }

const sessionIDPrefix = "customers-"

var errUnknownSession = errors.New("unknown or ended session")

// Generate returns a new ID with 128 random bits.
func (s *sessionIDs) Generate() string {
	id := sessionIDPrefix + rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live[id] = struct{}{}
	return id
}

// Validate refuses an ID that is not live; mcp-go then answers 404.
func (s *sessionIDs) Validate(id string) (terminated bool, err error) {
	if !s.isLive(id) {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate forgets id: from now on it is unknown, like an ID never issued.
func (s *sessionIDs) Terminate(id string) (notAllowed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, id)
	return false, nil
}

func (s *sessionIDs) isLive(id string) bool {
	if !strings.HasPrefix(id, sessionIDPrefix) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.live[id]
	return ok
}

// guardSessions answers 404 to a GET stream or a DELETE for a session that
// is not live, and 400 to a GET stream without a session, as mcp-go
// answers a POST for a session it does not know ("Invalid session ID").
// mcp-go checks the ID of a POST with the manager, but opens a GET stream
// for any ID, registering a session of that name for as long as the
// stream lasts, and for no ID at all makes one up: a stream no request of
// the client's can reach, held open for nothing. The transport says a
// server that needs sessions answers such a request 400. And it answers
// the DELETE of any ID 200, as if it had ended a session: the transport
// says a server answers 404 to a session ID it does not know, and the
// adapter answers so to a session that another user opened (WithIdentity
// in users.go): one answer for both, so that no one learns which sessions
// exist.
func (s *sessionIDs) guardSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		legacy := !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
		if legacy && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
			switch id := r.Header.Get(server.HeaderKeySessionID); {
			case id == "" && r.Method == http.MethodGet:
				http.Error(w, "Bad Request: Mcp-Session-Id required", http.StatusBadRequest)
				return
			case id != "" && !s.isLive(id):
				http.Error(w, "Invalid session ID", http.StatusNotFound)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
