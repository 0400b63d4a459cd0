package systemtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPSession connects the official Go SDK's client to endpoint over
// streamable HTTP through rt (http.DefaultTransport when nil), as an agent
// would; the session closes when the test ends.
func MCPSession(t testing.TB, endpoint string, rt http.RoundTripper) *sdk.ClientSession {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "imgflow-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// CallTool calls a tool and decodes its structuredContent into out (when
// not nil).
func CallTool(t testing.TB, cs *sdk.ClientSession, name string, args map[string]any, out any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", name, raw, err)
		}
	}
	return res
}

// ToolText is the text content of a tool's result, one part a line.
func ToolText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
