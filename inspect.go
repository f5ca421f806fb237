package adapter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Report is what Inspect tells about the adapter's commands, in name order.
type Report struct {
	Scheme   string          `json:"scheme"`
	Commands []CommandReport `json:"commands"`
}

// CommandReport is what one command is on the MCP surface.
type CommandReport struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Live reports a read-only command declared with Live.
	Live bool `json:"live"`
	// Tool is the tool's name: every command is a tool, except in
	// InspectContext for a session the command is not granted to.
	Tool string `json:"tool,omitempty"`
	// Resource is the plain resource (scheme://name), listed when every
	// argument is optional; "" otherwise.
	Resource string `json:"resource,omitempty"`
	// Template is the URI template, "" when there is none.
	Template string `json:"template,omitempty"`
	// Reason says why there is no template (a stable code; Why is its
	// Description); Detail names the argument concerned, where one is.
	Reason Reason `json:"reason,omitempty"`
	Why    string `json:"why,omitempty"`
	Detail string `json:"detail,omitempty"`
	// InputSchema is the schema tools/list publishes.
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Inspect reports, per command, its tool, its plain resource, its template,
// or the reason it has none, independent of any session's grants.
func (a *Adapter) Inspect() Report {
	return a.inspect(nil)
}

// InspectContext is Inspect as the session of ctx sees it: a command the
// grant function refuses there has no tool, resource or template, and
// ReasonNotGranted as its reason.
func (a *Adapter) InspectContext(ctx context.Context) Report {
	return a.inspect(ctx)
}

func (a *Adapter) inspect(ctx context.Context) Report {
	a.mu.RLock()
	cmds := make([]*command, 0, len(a.commands))
	for _, c := range a.commands {
		cmds = append(cmds, c)
	}
	a.mu.RUnlock()
	slices.SortFunc(cmds, func(x, y *command) int { return cmp.Compare(x.name, y.name) })

	r := Report{Scheme: a.cfg.scheme, Commands: make([]CommandReport, 0, len(cmds))}
	for _, c := range cmds {
		cr := CommandReport{
			Name: c.name, Description: c.description, Live: c.live, Tool: c.name,
			Reason: c.reason, Detail: c.detail,
			// A copy: tools/list publishes c.schema's very bytes.
			InputSchema: bytes.Clone(c.schema),
		}
		if c.tmpl != nil {
			cr.Template = c.tmpl.raw
			if c.listed() {
				cr.Resource = c.routeURI
			}
		}
		if ctx != nil && !a.granted(ctx, c.name) {
			// The session sees nothing of it: not even the tool.
			cr.Tool, cr.Template, cr.Resource = "", "", ""
			cr.Reason, cr.Detail = ReasonNotGranted, ""
		}
		cr.Why = cr.Reason.Description()
		r.Commands = append(r.Commands, cr)
	}
	return r
}

// String prints the report for a person: one block per command.
//
//	customers_show (live)
//	  tool      customers_show
//	  template  app://customers_show/{id}
func (r Report) String() string {
	var b strings.Builder
	for i, c := range r.Commands {
		if i > 0 {
			b.WriteByte('\n')
		}
		kind := "command"
		if c.Live {
			kind = "live"
		}
		fmt.Fprintf(&b, "%s (%s)\n", c.Name, kind)
		if c.Tool != "" {
			fmt.Fprintf(&b, "  tool      %s\n", c.Tool)
		}
		if c.Resource != "" {
			fmt.Fprintf(&b, "  resource  %s\n", c.Resource)
		}
		if c.Template != "" {
			fmt.Fprintf(&b, "  template  %s\n", c.Template)
		} else {
			why := c.Reason.Description()
			if c.Detail != "" {
				why += fmt.Sprintf(" (%s)", c.Detail)
			}
			fmt.Fprintf(&b, "  no template: %s [%s]\n", why, c.Reason)
		}
	}
	return b.String()
}

// ServeHTTP serves the report, for a debug route: JSON when the request
// accepts application/json, text otherwise. Commands are declared before
// the server serves, so a report taken then stays true:
//
//	mux.Handle("GET /debug/inspect", a.Inspect())
//
// It answers GET and HEAD only (405 otherwise, with Allow), and tells
// browsers not to sniff the body into another type: a report is data to
// read, never a page to run.
func (r Report) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the report answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if strings.Contains(req.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(r.String()))
}
