package adapter

import "github.com/mark3labs/mcp-go/server"

// Placeholder until liveregistry.go lands; delete this file then.

type liveRegistry struct{}

func (a *Adapter) initLive()                        {}
func (a *Adapter) installLiveHooks(h *server.Hooks) {}
