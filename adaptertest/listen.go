package adaptertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Subscription is what Listen established: the URIs the server acknowledged
// and the notifications/resources/updated that arrive for them.
//
// A test subscribes, writes, waits for the adapter to settle and looks:
//
//	sub, _ := c.Listen("app://customers_show/12")
//	updateCustomer(12, "Ada King")
//	a.Changed("customers")
//	c.WaitIdle()
//	got := sub.Take() // ["app://customers_show/12"]
type Subscription struct {
	// Acknowledged lists the URIs the server acknowledged, as it listed
	// them; each is notified with the spelling given to Listen.
	Acknowledged []string
	// Refused lists the URIs given to Listen that the server did not
	// acknowledge: they fail to convert or validate, name no granted live
	// command, exceed a subscription cap, have their first run refused by
	// the rate limit, or came after the adapter's Close began.
	Refused []string

	c     *Client
	id    string          // the JSON of the listen request's id; "" for legacy
	acked map[string]bool // guarded by c.mu

	mu       sync.Mutex
	received []string
	taken    int

	cancel context.CancelFunc // ends the listen request; nil for legacy
	done   chan struct{}      // closed when the listen request returned
	once   sync.Once
}

// Listen subscribes to uris, expanded URIs of live commands, and returns
// once the server acknowledged them. On protocol version 2026-07-28 it opens
// a subscriptions/listen stream that lives until Close or the end of the
// test; on 2025-11-25 it sends resources/subscribe for each URI. A URI the
// server refuses is not an error: it is listed in Refused, as the
// acknowledgement leaves it out. The error is a *WireError when the server
// failed the whole request.
//
// The server acknowledges once the first run of every URI has ended. A
// listen stream not acknowledged within 30 seconds (a command that never
// returns) is cancelled, and Listen returns an error saying so, rather than
// hang the test.
func (c *Client) Listen(uris ...string) (*Subscription, error) {
	c.t.Helper()
	return c.listen(listenAckTimeout, uris)
}

// listenAckTimeout bounds how long Listen waits for a listen stream's
// acknowledgement, as waitIdleTimeout bounds WaitIdle.
const listenAckTimeout = 30 * time.Second

// listen is Listen, waiting at most ackTimeout for the acknowledgement.
func (c *Client) listen(ackTimeout time.Duration, uris []string) (*Subscription, error) {
	c.t.Helper()
	s := &Subscription{c: c, acked: make(map[string]bool)}
	if c.version != ModernVersion {
		return c.listenLegacy(s, uris), nil
	}

	id := c.ids.Add(1)
	s.id = idString(id)
	ack := make(chan mcp.SubscriptionFilter, 1)
	ctx, cancel := context.WithCancel(c.ctx)
	s.cancel, s.done = cancel, make(chan struct{})
	c.mu.Lock()
	c.acks[s.id] = ack
	c.subs[s] = struct{}{}
	c.mu.Unlock()

	msg := c.encode(id, string(mcp.MethodSubscriptionsListen), mcp.SubscriptionsListenParams{
		Notifications: mcp.SubscriptionFilter{ResourceSubscriptions: uris},
	})
	ended := make(chan mcp.JSONRPCMessage, 1)
	go func() {
		defer close(s.done)
		ended <- c.a.HandleMessage(ctx, msg)
	}()

	timeout := time.NewTimer(ackTimeout)
	defer timeout.Stop()
	select {
	case f := <-ack:
		s.acknowledge(uris, f.ResourceSubscriptions)
		return s, nil
	case <-timeout.C:
		// Not waited for: a command that ignores its context keeps the
		// request running until it returns.
		cancel()
		s.forget()
		return nil, fmt.Errorf("adaptertest: subscriptions/listen %q: no acknowledgement within %v (the first runs had not all ended); the request was cancelled", uris, ackTimeout)
	case resp := <-ended:
		// The stream ended at once: the server failed it, or it had
		// nothing to listen to. Its acknowledgement, if any, was sent
		// before it ended.
		c.flush()
		select {
		case f := <-ack:
			s.acknowledge(uris, f.ResourceSubscriptions)
			s.forget()
			return s, nil
		default:
		}
		s.forget()
		if _, werr := c.decode(string(mcp.MethodSubscriptionsListen), resp); werr != nil {
			return nil, werr
		}
		return nil, fmt.Errorf("adaptertest: subscriptions/listen ended without an acknowledgement")
	}
}

// listenLegacy subscribes to each URI with resources/subscribe.
func (c *Client) listenLegacy(s *Subscription, uris []string) *Subscription {
	c.t.Helper()
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	for _, u := range uris {
		if _, werr := c.call(string(mcp.MethodResourcesSubscribe), mcp.SubscribeParams{URI: u}); werr != nil {
			s.Refused = append(s.Refused, u)
			continue
		}
		c.mu.Lock()
		s.acked[u] = true
		c.mu.Unlock()
		s.Acknowledged = append(s.Acknowledged, u)
	}
	return s
}

// acknowledge records what the server acknowledged of asked.
func (s *Subscription) acknowledge(asked, acked []string) {
	s.c.mu.Lock()
	for _, u := range acked {
		s.acked[u] = true
	}
	s.c.mu.Unlock()
	s.Acknowledged = acked
	for _, u := range asked {
		if !slices.Contains(acked, u) {
			s.Refused = append(s.Refused, u)
		}
	}
}

// Received returns the URIs of every notifications/resources/updated the
// subscription received, in order, including any the server handed the
// session before the call.
func (s *Subscription) Received() []string {
	s.c.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.received)
}

// Take returns the URIs received since the previous Take, as Received does.
func (s *Subscription) Take() []string {
	s.c.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.received[s.taken:])
	s.taken = len(s.received)
	return out
}

// Close ends the subscription: on 2026-07-28 the listen stream ends (and the
// server drops its subscriptions); on 2025-11-25 each acknowledged URI is
// unsubscribed, unless another open Subscription of the client holds it
// too. Nothing is received after Close. Closing twice does nothing.
func (s *Subscription) Close() {
	s.c.t.Helper()
	s.once.Do(func() {
		if s.cancel != nil {
			s.cancel()
			<-s.done
		} else {
			for _, u := range s.release() {
				if _, werr := s.c.call(string(mcp.MethodResourcesUnsubscribe), mcp.UnsubscribeParams{URI: u}); werr != nil {
					s.c.t.Errorf("adaptertest: resources/unsubscribe %s: %v", u, werr)
				}
			}
		}
		s.forget()
	})
}

// release stops dispatching to s and returns the URIs it acknowledged that
// no other open subscription of the client holds. On 2025-11-25 the server
// keeps one subscription per session and URI, shared by every Subscription
// of the client that asked for it; unsubscribing a URI another one still
// holds would silence that one too, where on 2026-07-28 each listen stream
// is a subscription of its own.
func (s *Subscription) release() []string {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	delete(s.c.subs, s)
	var free []string
	for _, u := range s.Acknowledged {
		held := false
		for other := range s.c.subs {
			held = held || other.acked[u]
		}
		if !held {
			free = append(free, u)
		}
	}
	return free
}

// end is Close without requests to the server, for when the client closes:
// unregistering the session frees legacy subscriptions.
func (s *Subscription) end() {
	s.once.Do(func() {
		if s.cancel != nil {
			s.cancel()
			<-s.done
		}
		s.forget()
	})
}

// forget stops dispatching to s.
func (s *Subscription) forget() {
	s.c.mu.Lock()
	delete(s.c.subs, s)
	delete(s.c.acks, s.id)
	s.c.mu.Unlock()
}

// receives reports whether a notification for uri, on the listen stream
// with the given id ("" when it names none), is s's. Callers hold c.mu.
func (s *Subscription) receives(streamID, uri string) bool {
	if streamID != "" {
		return s.id == streamID
	}
	return s.acked[uri]
}

// flushKey marks the notification that flush sends through the session's
// channel behind everything already in it.
const flushKey = "adaptertest/flush"

// flush returns once every notification the server handed the session
// before the call has been dispatched.
func (c *Client) flush() {
	done := make(chan struct{})
	marker := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: flushKey,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{flushKey: done}},
		},
	}
	select {
	case c.session.NotificationChannel() <- marker:
	case <-c.done:
		return
	}
	select {
	case <-done:
	case <-c.done:
	}
}

// dispatch routes one notification: a flush marker, the acknowledgement of a
// listen request, or an update for the subscriptions it belongs to.
// Anything else is dropped.
func (c *Client) dispatch(n mcp.JSONRPCNotification) {
	switch n.Method {
	case flushKey:
		if done, ok := n.Params.AdditionalFields[flushKey].(chan struct{}); ok {
			close(done)
		}
	case mcp.MethodNotificationSubscriptionsAcknowledged:
		var f mcp.SubscriptionFilter
		if b, err := json.Marshal(n.Params.AdditionalFields["notifications"]); err == nil {
			_ = json.Unmarshal(b, &f)
		}
		id := idString(n.Params.Meta[mcp.MetaKeySubscriptionID])
		c.mu.Lock()
		ack := c.acks[id]
		delete(c.acks, id)
		c.mu.Unlock()
		if ack != nil {
			ack <- f
		}
	case mcp.MethodNotificationResourceUpdated:
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		streamID := ""
		if v, ok := n.Params.Meta[mcp.MetaKeySubscriptionID]; ok {
			streamID = idString(v)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for s := range c.subs {
			if s.receives(streamID, uri) {
				s.mu.Lock()
				s.received = append(s.received, uri)
				s.mu.Unlock()
			}
		}
	}
}

// idString spells a JSON-RPC id as its JSON, the same for the id the client
// sent (an int64) and the id the server tags notifications with (what it
// decoded: a float64).
func idString(id any) string {
	b, _ := json.Marshal(id)
	return string(b)
}

// waitIdleTimeout bounds WaitIdle, so that a registry that never settles
// fails the test instead of hanging it.
const waitIdleTimeout = 30 * time.Second

// WaitIdle returns once the adapter has no live work left (Adapter.WaitIdle:
// every re-run done, every notification handed to its session) and the
// client has received every notification handed to its session. After a
// write and its Changed call, a test calls WaitIdle and then looks at what
// its subscriptions received. It fails the test if the adapter does not
// settle within 30 seconds.
func (c *Client) WaitIdle() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), waitIdleTimeout)
	defer cancel()
	if err := c.a.WaitIdle(ctx); err != nil {
		c.t.Fatalf("adaptertest: WaitIdle: %v (%+v)", err, c.a.LiveStats())
	}
	c.flush()
}
