package definitions

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every n8n template whose Code node requires('crypto') tells a
// self-hosted user, in its Setup note and on the node itself, to start n8n
// with NODE_FUNCTION_ALLOW_BUILTIN=crypto (a default self-hosted n8n
// refuses the module, and every delivery would fail).
func TestN8nTemplatesNeedingCryptoSayHowToAllowIt(t *testing.T) {
	needing := 0
	for path, nodes := range n8nTemplates(t) {
		var setup string
		var coded []n8nTemplateNode
		for _, n := range nodes {
			var p struct {
				Content string `json:"content"`
				JSCode  string `json:"jsCode"`
			}
			json.Unmarshal(n.Parameters, &p)
			if n.Type == "n8n-nodes-base.stickyNote" {
				setup += p.Content
			}
			if n.Type == "n8n-nodes-base.code" && strings.Contains(p.JSCode, "require('crypto')") {
				coded = append(coded, n)
			}
		}
		if len(coded) == 0 {
			continue
		}
		needing++
		if !strings.Contains(setup, "`"+n8nAllowCrypto+"`") || !strings.Contains(setup, "Self-hosted n8n") {
			t.Errorf("%s: its Code node needs crypto, but the Setup note does not say to set %s:\n%s", path, n8nAllowCrypto, setup)
		}
	}
	for _, f := range render(t) {
		if f.Platform != "n8n" || !strings.Contains(string(f.Data), `require('crypto')`) {
			continue
		}
		var wf struct {
			Nodes []struct {
				Type  string `json:"type"`
				Notes string `json:"notes"`
			} `json:"nodes"`
		}
		json.Unmarshal(f.Data, &wf)
		for _, n := range wf.Nodes {
			if n.Type == "n8n-nodes-base.code" && !strings.Contains(n.Notes, n8nAllowCrypto) {
				t.Errorf("%s: the Code node's note does not name %s: %q", f.Path(), n8nAllowCrypto, n.Notes)
			}
		}
	}
	if needing != 3 {
		t.Errorf("%d templates verify signatures with crypto; want the three webhook templates", needing)
	}
}
