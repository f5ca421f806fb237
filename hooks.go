package adapter

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// installHooks appends the adapter's hooks to the server's, after any the
// user added, so that the user's hooks keep running as before.
func (a *Adapter) installHooks(h *server.Hooks) {
	h.AddBeforeReadResource(a.routeRead)
	h.AddAfterReadResource(a.readResultMeta)
	h.AddAfterListResources(a.filterResources)
	h.AddAfterListResourceTemplates(a.filterTemplates)
	h.AddOnError(a.onError)
	h.AddOnRequestInitialization(a.ambiguousRequestHook) // before subscribeHook
	a.installLiveHooks(h)
	if a.cfg.identity != nil {
		h.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
			a.owners.forget(s.SessionID())
		})
	}
}

// filterResources removes from resources/list the adapter's routing
// resources that are not meant to be listed (commands with required
// arguments) and those of commands the session is not granted.
func (a *Adapter) filterResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if res == nil {
		return
	}
	kept := res.Resources[:0]
	for _, r := range res.Resources {
		if c := a.ownResource(r.URI); c != nil && (!c.listed() || !a.granted(ctx, c.name)) {
			continue
		}
		kept = append(kept, r)
	}
	res.Resources = kept
}

// filterTemplates removes from resources/templates/list the templates of
// commands the session is not granted.
func (a *Adapter) filterTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res == nil || a.cfg.grant == nil {
		return
	}
	kept := res.ResourceTemplates[:0]
	for _, t := range res.ResourceTemplates {
		if c := a.command(t.Name); c != nil && c.tmpl != nil && t.URITemplate != nil &&
			t.URITemplate.Raw() == c.tmpl.raw && !a.granted(ctx, c.name) {
			continue
		}
		kept = append(kept, t)
	}
	res.ResourceTemplates = kept
}

// ownResource returns the command whose routing resource has uri.
func (a *Adapter) ownResource(uri string) *command {
	name, ok := splitCommand(a.cfg.scheme, uri)
	if !ok {
		return nil
	}
	if c := a.command(name); c != nil && c.routeURI == uri {
		return c
	}
	return nil
}

// readResultMeta completes the result of a read of a live command: its
// version (MetaVersion) in _meta, and on 2026-07-28 its cache hints. A
// command with hints of its own (WithCacheTTL, WithPublicCache) says its
// TTL, and public only when it asks to and no grant or scope applies.
// Another whose answer a grant or a scope may shape says private with
// ttlMs 0, whatever the server's default, so that no shared cache hands one
// caller's answer to another. Any other keeps the server's default, which
// mcp-go fills in after this hook.
func (a *Adapter) readResultMeta(ctx context.Context, _ any, req *mcp.ReadResourceRequest, res *mcp.ReadResourceResult) {
	st := readStateFrom(*req)
	if res == nil || st == nil {
		return
	}
	if st.version != "" {
		if res.Meta == nil {
			res.Meta = &mcp.Meta{}
		}
		if res.Meta.AdditionalFields == nil {
			res.Meta.AdditionalFields = map[string]any{}
		}
		res.Meta.AdditionalFields[MetaVersion] = st.version
	}
	if !server.IsModernRequest(ctx) {
		return
	}
	shaped := a.cfg.grant != nil || a.cfg.scope != nil
	c := st.cmd
	switch {
	case c.cache:
		scope := mcp.CacheScopePrivate
		if c.publicCache && !shaped {
			scope = mcp.CacheScopePublic
		}
		res.SetCacheHints(c.cacheTTL.Milliseconds(), scope)
	case shaped:
		res.SetCacheHints(0, mcp.CacheScopePrivate)
	}
}
