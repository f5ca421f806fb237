//go:build tools

package adapter

import (
	_ "github.com/invopop/jsonschema"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/mark3labs/mcp-go/client"
	_ "github.com/mark3labs/mcp-go/mcptest"
	_ "github.com/mark3labs/mcp-go/server"
	_ "go.uber.org/goleak"
	_ "golang.org/x/time/rate"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
