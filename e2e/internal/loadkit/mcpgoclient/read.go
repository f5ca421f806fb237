// Package mcpgoclient is what the load tests' mark3labs/mcp-go clients
// share, apart from package loadkit so that a test with other clients
// (e2e/chaos) can use loadkit without mcp-go.
package mcpgoclient

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

// ReadText reads uri on c, within loadkit.CallTimeout, and returns its
// one text content, which the example's resources always are.
func ReadText(ctx context.Context, c *client.Client, uri string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, loadkit.CallTimeout)
	defer cancel()
	res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return "", fmt.Errorf("read %s: %w", uri, err)
	}
	if len(res.Contents) != 1 {
		return "", fmt.Errorf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	text, ok := mcp.AsTextResourceContents(res.Contents[0])
	if !ok || text.URI != uri {
		return "", fmt.Errorf("read %s: got %#v, want one text content with that uri", uri, res.Contents[0])
	}
	return text.Text, nil
}
