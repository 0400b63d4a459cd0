package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/imgflow/imgflow/connector/keyring"
)

// listTools is tools/list as a client reads it, and its size in bytes.
func listTools(t *testing.T) ([]*sdk.Tool, int) {
	t.Helper()
	kr, err := keyring.New("test-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, New(Options{Backend: &fakeBackend{}, Uploads: &Uploads{Keys: kr, PublicURL: "https://imgflow.example.com"}}))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res)
	return res.Tools, len(raw)
}

// tools/list is read into every conversation's context: it stays within
// 19,500 bytes (eight tools), and speaks of what the tools do, not of the automation
// platforms the catalog also serves.
func TestToolsListIsSmallAndWrittenForAModel(t *testing.T) {
	tools, size := listTools(t)
	t.Logf("tools/list: %d bytes, %d tools", size, len(tools))
	if size > 19500 {
		t.Errorf("tools/list is %d bytes; want at most 19,500", size)
	}
	raw, _ := json.Marshal(tools)
	for _, word := range []string{"trigger", "Zap", "platforms pass", "(Base64)", "Polling", "every few minutes"} {
		if strings.Contains(string(raw), word) {
			t.Errorf("tools/list says %q", word)
		}
	}
}
