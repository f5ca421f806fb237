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

// guardStreams answers 404 to a GET stream for a session that is not live,
// and 400 to one without a session. mcp-go checks the ID of a POST and a
// DELETE with the manager, but opens a GET stream for any ID, registering
// a session of that name for as long as the stream lasts, and for no ID at
// all makes one up: a stream no request of the client's can reach, held
// open for nothing. The transport says a server that needs sessions
// answers such a request 400.
func (s *sessionIDs) guardStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			switch id := r.Header.Get(server.HeaderKeySessionID); {
			case id == "":
				http.Error(w, "Bad Request: Mcp-Session-Id required", http.StatusBadRequest)
				return
			case !s.isLive(id):
				http.Error(w, "Invalid session ID", http.StatusNotFound)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
