package adapter

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// How subscriptions reach the live registry through mcp-go's hooks.
//
// subscriptions/listen (2026-07-28): mcp-go acknowledges the URI list its
// request holds after the before-hooks ran, so listenHook subscribes each
// URI the adapter owns and removes from the list those it refused; the
// acknowledgement then names exactly the rest. The request lives until its
// context ends; the after-hook, OnError and a context.AfterFunc end the
// stream's subscriptions then, whichever comes first.
//
// resources/subscribe (before 2026-07-28): mcp-go's before-hooks cannot
// fail a request, and it accepts any URI. A request-initialization hook can
// fail one, and sees the raw message, so subscribeHook serves the
// subscription there and, when it refuses the URI, fails the request. mcp-go
// answers such a failure with -32600 and the error's message; the exact
// error (resource-not-found for the era, -32602 with data.errors, the rate
// limit's code) goes into the errorBox, from which the adapter's transport
// edges answer it. Unsubscribe is served after mcp-go accepted it, and
// unregistering a session frees everything it held.

// installLiveHooks appends the hooks of the live registry to h. The hooks
// find a.live when they run, after Wrap made it.
func (a *Adapter) installLiveHooks(h *server.Hooks) {
	h.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		a.live.sessionRegistered(s)
	})
	h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		a.live.sessionClosed(s)
	})
	h.AddOnRequestInitialization(a.subscribeHook)
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		a.live.unsubscribe(sessionFrom(ctx), req.Params.URI)
	})
	h.AddBeforeSubscriptionsListen(a.listenHook)
	h.AddAfterSubscriptionsListen(func(_ context.Context, _ any, req *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		a.live.endListen(req)
	})
	h.AddOnError(func(_ context.Context, _ any, method mcp.MCPMethod, message any, _ error) {
		if req, ok := message.(*mcp.SubscriptionsListenRequest); ok && method == mcp.MethodSubscriptionsListen {
			a.live.endListen(req)
		}
	})
}

// listenHook subscribes the URIs of a subscriptions/listen request that the
// adapter owns and leaves in the request only those it subscribed, and the
// URIs it does not own.
func (a *Adapter) listenHook(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
	uris := req.Params.Notifications.ResourceSubscriptions
	if len(uris) == 0 {
		return
	}
	session := sessionFrom(ctx)
	r := a.live
	var s *stream
	foreign := foreignURIs{a: a}
	kept := make([]string, 0, len(uris))
	for _, uri := range uris {
		rs := a.resolve(ctx, uri)
		if rs == nil {
			if foreign.has(uri) {
				kept = append(kept, uri)
			} else {
				r.refused.Add(1)
				a.logger.DebugContext(ctx, "adapter: subscription not acknowledged", "uri", uri, "reason", "no live command with a template")
			}
			continue
		}
		if session == nil {
			continue // mcp-go refuses the request: it needs a session
		}
		if s == nil {
			if s = r.openListen(ctx, session, id, req); s == nil {
				r.refused.Add(1)
				a.logger.DebugContext(ctx, "adapter: subscription not acknowledged", "uri", uri, "reason", errListenBesideGET)
				continue
			}
		}
		if err := r.subscribe(ctx, rs, func() (*stream, *rpcError) { return s, nil }); err != nil {
			r.refused.Add(1)
			a.logger.DebugContext(ctx, "adapter: subscription not acknowledged", "uri", uri, "reason", err.Message)
			continue
		}
		kept = append(kept, uri)
	}
	req.Params.Notifications.ResourceSubscriptions = kept
	if s != nil {
		r.armListen(ctx, s)
	}
}

// subscribeHook serves a legacy resources/subscribe of a URI the adapter
// owns, and fails the request when it refuses the URI. Every other request
// passes after a substring test.
func (a *Adapter) subscribeHook(ctx context.Context, id any, message any) error {
	raw, ok := message.(json.RawMessage)
	// The substring test keeps the common request cheap. JSON may spell
	// the method with escapes ("resources\u002fsubscribe"), which mcp-go
	// decodes to the same method: any message with a backslash-u escape
	// is decoded to be sure.
	if !ok || !bytes.Contains(raw, []byte("subscribe")) && !bytes.Contains(raw, []byte(`\u`)) {
		return nil
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			URI  string          `json:"uri"`
			Meta json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Method != string(mcp.MethodResourcesSubscribe) || m.Params.URI == "" {
		// mcp-go answers these itself: a malformed request.
		return nil
	}
	uri := m.Params.URI
	var err *rpcError
	meta, metaErr := subscribeMeta(m.Params.Meta)
	switch {
	case metaErr != nil:
		// mcp-go would answer success and make nothing: a client would
		// wait for notifications that never come.
		err = metaErr
	case mcp.IsModernProtocol(meta.ProtocolVersion()):
		return nil // mcp-go answers: 2026-07-28 removed the method
	default:
		err = a.subscribeLegacy(ctx, uri)
	}
	if err == nil {
		return nil
	}
	a.live.refused.Add(1)
	if box := errorBoxFrom(ctx); box != nil {
		box.put(id, err)
	}
	return err
}

// subscribeMeta decodes the _meta of a resources/subscribe: absent or null
// is none; anything but an object is invalid params, named. An object
// that mcp.Meta cannot decode (a number past float64 anywhere in it) is
// none as well: mcp-go reads the request's era through mcp.Meta, finds no
// _meta, and serves it as a legacy request, with success.
func subscribeMeta(raw json.RawMessage) (*mcp.Meta, *rpcError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var meta *mcp.Meta
	if json.Unmarshal(raw, &meta) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			return nil, nil
		}
		fe := FieldError{Field: "_meta", Message: "must be an object"}
		return nil, &rpcError{Code: mcp.INVALID_PARAMS, Message: fe.Error(), Data: &ValidationError{Errors: []FieldError{fe}}}
	}
	return meta, nil
}

// subscribeLegacy serves the subscription of a resources/subscribe to uri:
// nil when it is made, or is one the adapter does not own.
func (a *Adapter) subscribeLegacy(ctx context.Context, uri string) *rpcError {
	var err *rpcError
	if rs := a.resolve(ctx, uri); rs != nil {
		err = a.live.subscribe(ctx, rs, a.live.openLegacy(ctx, sessionFrom(ctx)))
	} else if foreign := (foreignURIs{a: a}); !foreign.has(uri) {
		err = notFound(ctx, uri, "")
	}
	return err
}
