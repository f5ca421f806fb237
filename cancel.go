package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// Cancellation by the client.
//
// The protocol lets a client cancel a request it sent with
// notifications/cancelled, naming the request's ID, and says that a server
// SHOULD NOT answer a request once it is cancelled. mcp-go cancels the
// request's context, but still writes the answer of a
// subscriptions/listen it cancelled: the edges leave it out.
//
// On stateless Streamable HTTP (protocol 2026-07-28) mcp-go keys the
// requests in flight by session ID and request ID, and every request there
// has the session ID "": a notifications/cancelled from any client would
// cancel the request of that ID registered last, whoever sent it (and a
// second request with the same ID hides the first from its own client's
// cancel). So HTTPHandler answers those notifications itself. It keeps
// the requests in flight that it serves by identity (WithIdentity; one
// identity, "", for all without it) and ID, and cancels those of the
// sender's identity: their contexts end, and mcp-go, whose request
// context has ended, writes nothing more into their responses.

// statelessRequests are the 2026-07-28 requests in flight through
// HTTPHandler, by who sent them and their ID.
type statelessRequests struct {
	mu sync.Mutex
	m  map[statelessKey][]*inFlight
}

type statelessKey struct{ identity, id string }

// inFlight is one request in flight on stateless HTTP.
type inFlight struct {
	cancel context.CancelFunc
	// edge is the response of a subscriptions/listen, which ends unsent
	// once cancelled; nil for other requests.
	edge *httpEdge
}

// add keeps f until the returned function is called, when f's request
// has been answered.
func (s *statelessRequests) add(k statelessKey, f *inFlight) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[statelessKey][]*inFlight)
	}
	s.m[k] = append(s.m[k], f)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		list := s.m[k]
		for i, g := range list {
			if g == f {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.m, k)
			return
		}
		s.m[k] = list
	}
}

// cancel cancels the requests in flight under k. A listen's response
// drops whatever would follow first, its result among it.
func (s *statelessRequests) cancel(k statelessKey) {
	s.mu.Lock()
	list := append([]*inFlight(nil), s.m[k]...)
	s.mu.Unlock()
	for _, f := range list {
		if f.edge != nil {
			f.edge.cancelListen()
		}
		f.cancel()
	}
}

// cancelledRequestID returns the key of the request a notifications/cancelled
// names, and whether body is one. A body without requestId is one that
// cancels nothing. The byte test spares decoding every other body; JSON
// escapes may spell the method otherwise, and a body with one is decoded.
func cancelledRequestID(body []byte) (id string, ok bool) {
	if !bytes.Contains(body, []byte(mcp.MethodNotificationCancelled)) && bytes.IndexByte(body, '\\') < 0 {
		return "", false
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m.Method != string(mcp.MethodNotificationCancelled) ||
		json.Unmarshal(body, &keys) != nil || hasIDKey(keys) {
		return "", false
	}
	if len(m.Params.RequestID) == 0 {
		return "", true
	}
	return idKey(m.Params.RequestID), true
}

// requestID returns the ID of body, a request, as idKey spells it, and
// whether it is a subscriptions/listen; "" for a notification or a body
// that cannot be read.
func requestID(body []byte) (id string, listen bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return "", false
	}
	return idKey(m.ID), m.Method == string(mcp.MethodSubscriptionsListen)
}

// stdioListens are the subscriptions/listen requests in flight on a
// stdio connection, by ID (idKey), and whether the client cancelled each:
// ServeStdio does not write the answer of a cancelled one.
type stdioListens struct {
	mu sync.Mutex
	m  map[string]bool
}

// read notes what line, a message the client sent, says of listens: a
// listen begins, or a notifications/cancelled names one in flight.
func (l *stdioListens) read(line []byte) {
	if id := listenRequestID(line); id != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.m == nil {
			l.m = make(map[string]bool)
		}
		if _, ok := l.m[idKey(id)]; !ok {
			// A second listen with an ID in flight is refused, and
			// answered with a null ID.
			l.m[idKey(id)] = false
		}
		return
	}
	id, ok := cancelledRequestID(line)
	if !ok || id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, open := l.m[id]; open {
		l.m[id] = true
	}
}

// drop reports whether msg, a message the server writes, is the answer of
// a listen its client cancelled; the listen is done with either way.
func (l *stdioListens) drop(msg []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) == 0 {
		return false
	}
	kind, id := peekMessage(msg)
	if id == nil || kind == kindOther {
		return false
	}
	k := idKey(id)
	cancelled, ok := l.m[k]
	if ok {
		delete(l.m, k)
	}
	return cancelled
}
