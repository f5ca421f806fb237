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
	text, _, err := Read(ctx, c, uri)
	return text, err
}

// MetaVersion is the _meta key under which the adapter gives the version
// of a live URI's result (adapter.MetaVersion), and MetaVersions the key
// under which a subscriptions/listen names those the client last saw
// (adapter.MetaVersions). The load tests do not import the adapter.
const (
	MetaVersion  = "io.github.mcplive/version"
	MetaVersions = "io.github.mcplive/versions"
)

// Read is ReadText, with the version of the result the server gave in
// _meta ("" for none).
func Read(ctx context.Context, c *client.Client, uri string) (text, version string, err error) {
	ctx, cancel := context.WithTimeout(ctx, loadkit.CallTimeout)
	defer cancel()
	res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", uri, err)
	}
	if len(res.Contents) != 1 {
		return "", "", fmt.Errorf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	content, ok := mcp.AsTextResourceContents(res.Contents[0])
	if !ok || content.URI != uri {
		return "", "", fmt.Errorf("read %s: got %#v, want one text content with that uri", uri, res.Contents[0])
	}
	if res.Meta != nil {
		version, _ = res.Meta.AdditionalFields[MetaVersion].(string)
	}
	return content.Text, version, nil
}
