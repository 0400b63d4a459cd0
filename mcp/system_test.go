package mcp_test

import (
	"testing"

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
