package mcp_test

import (
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// system is the whole of imgflow (internal/systemtest) with the helpers of
// this package's system tests as its methods.
type system struct{ *systemtest.System }

// startSystem starts the whole system; configure may change its options.
func startSystem(t *testing.T, configure ...func(*systemtest.Options)) *system {
	t.Helper()
	return &system{systemtest.Start(t, configure...)}
}

// mcp is an MCP session with the system's key as a Bearer token.
func (s *system) mcp() *sdk.ClientSession {
	return systemtest.MCPSession(s.T, s.API+"/mcp", systemtest.KeyTransport{Header: "Authorization", Value: "Bearer " + s.Key, Base: http.DefaultTransport})
}
