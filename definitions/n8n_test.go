package definitions

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// n8nMinimumNodeVersions are the typeVersions each built-in node has in the
// oldest n8n the templates support (N8nMinimum): n8n 2.8.4, whose
// n8n-nodes-base 2.8.1 declares them in dist/nodes/<Node>/…node.js
// (`version: [...]`). A template node of another type or version would
// import there and then fail to run (NodeTypes.getByNameAndVersion), as
// HTTP Request 4.5 did. Raising N8nMinimum means reading this table again
// from that release.
const n8nMinimumTable = "2.8"

var n8nMinimumNodeVersions = map[string][]float64{
	"n8n-nodes-base.httpRequest":      {3, 4, 4.1, 4.2, 4.3, 4.4},
	"n8n-nodes-base.if":               {2, 2.1, 2.2, 2.3},
	"n8n-nodes-base.wait":             {1, 1.1},
	"n8n-nodes-base.webhook":          {1, 1.1, 2, 2.1},
	"n8n-nodes-base.readWriteFile":    {1, 1.1},
	"n8n-nodes-base.code":             {1, 2},
	"n8n-nodes-base.respondToWebhook": {1, 1.1, 1.2, 1.3, 1.4, 1.5},
	"n8n-nodes-base.stopAndError":     {1},
	"n8n-nodes-base.manualTrigger":    {1},
	"n8n-nodes-base.stickyNote":       {1},
	"n8n-nodes-base.noOp":             {1},
}

type n8nTemplateNode struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	TypeVersion float64         `json:"typeVersion"`
	Parameters  json.RawMessage `json:"parameters"`
	Credentials json.RawMessage `json:"credentials"`
}

func n8nTemplates(t *testing.T) map[string][]n8nTemplateNode {
	t.Helper()
	out := map[string][]n8nTemplateNode{}
	for _, f := range render(t) {
		if f.Platform != "n8n" {
			continue
		}
		var wf struct {
			Nodes []n8nTemplateNode `json:"nodes"`
		}
		if err := json.Unmarshal(f.Data, &wf); err != nil {
			t.Fatalf("%s: %v", f.Path(), err)
		}
		out[f.Path()] = wf.Nodes
	}
	if len(out) == 0 {
		t.Fatal("no n8n templates rendered")
	}
	return out
}

// Every node of every template exists, in that version, in the oldest n8n
// the README claims.
func TestN8nTemplatesUseOnlyNodeVersionsOfTheMinimumN8n(t *testing.T) {
	if N8nMinimum != n8nMinimumTable {
		t.Fatalf("N8nMinimum is %s but n8nMinimumNodeVersions lists n8n %s: read the node versions of n8n %s's n8n-nodes-base into the table", N8nMinimum, n8nMinimumTable, N8nMinimum)
	}
	for path, nodes := range n8nTemplates(t) {
		for _, n := range nodes {
			versions, ok := n8nMinimumNodeVersions[n.Type]
			if !ok {
				t.Errorf("%s: node %q is a %s, which the table of n8n %s does not list: check that release has it and add its versions", path, n.Name, n.Type, N8nMinimum)
				continue
			}
			if !slices.Contains(versions, n.TypeVersion) {
				t.Errorf("%s: node %q is %s version %v; n8n %s has versions %v only", path, n.Name, n.Type, n.TypeVersion, N8nMinimum, versions)
			}
		}
	}
}

// The shapes that depend on a node's version match the version written: the
// If node's filter conditions carry the filter version that typeVersion
// writes, and an HTTP Request sending the API key does not forward it on a
// redirect to another origin (the default from 4.4 on).
func TestN8nTemplateParametersMatchTheirNodeVersion(t *testing.T) {
	for path, nodes := range n8nTemplates(t) {
		for _, n := range nodes {
			switch n.Type {
			case "n8n-nodes-base.if":
				var p struct {
					Conditions struct {
						Options struct {
							Version float64 `json:"version"`
						} `json:"options"`
					} `json:"conditions"`
				}
				if err := json.Unmarshal(n.Parameters, &p); err != nil {
					t.Fatalf("%s %s: %v", path, n.Name, err)
				}
				// IfV2: version '={{ $nodeVersion >= 2.3 ? 3 : $nodeVersion >= 2.2 ? 2 : 1 }}'
				want := 1.0
				if n.TypeVersion >= 2.3 {
					want = 3
				} else if n.TypeVersion >= 2.2 {
					want = 2
				}
				if p.Conditions.Options.Version != want {
					t.Errorf("%s: If %q version %v has filter version %v, want %v", path, n.Name, n.TypeVersion, p.Conditions.Options.Version, want)
				}
			case "n8n-nodes-base.httpRequest":
				if len(n.Credentials) == 0 || string(n.Credentials) == "null" {
					continue
				}
				var p struct {
					Options struct {
						SendCredentialsOnCrossOriginRedirect *bool `json:"sendCredentialsOnCrossOriginRedirect"`
					} `json:"options"`
				}
				if err := json.Unmarshal(n.Parameters, &p); err != nil {
					t.Fatalf("%s %s: %v", path, n.Name, err)
				}
				explicit := p.Options.SendCredentialsOnCrossOriginRedirect
				if n.TypeVersion < 4.4 && (explicit == nil || *explicit) {
					t.Errorf("%s: HTTP Request %q (version %v) sends credentials and would forward them on a cross-origin redirect (version 4.4 stops that)", path, n.Name, n.TypeVersion)
				}
			}
		}
	}
}

// The minimum is stated where users and tools look: docs/n8n.md, the
// package's README and package.json (engines.n8n), and the
// oldest n8n the package's CI runs (e2e/oldest) is of that release.
func TestN8nMinimumIsStated(t *testing.T) {
	line := "n8n >= " + N8nMinimum
	for _, p := range []string{"../docs/n8n.md", "n8n-nodes-imgflow/README.md"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), line) {
			t.Errorf("%s does not say %q", p, line)
		}
	}
	var pkg struct {
		Engines struct {
			N8n string `json:"n8n"`
		} `json:"engines"`
	}
	readJSON(t, "n8n-nodes-imgflow/package.json", &pkg)
	if want := ">=" + N8nMinimum + ".0"; pkg.Engines.N8n != want {
		t.Errorf("n8n-nodes-imgflow/package.json engines.n8n = %q, want %q", pkg.Engines.N8n, want)
	}
	var oldest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, "n8n-nodes-imgflow/e2e/oldest/package.json", &oldest)
	if v := oldest.Dependencies["n8n"]; !strings.HasPrefix(v, N8nMinimum+".") {
		t.Errorf("n8n-nodes-imgflow/e2e/oldest/package.json pins n8n %q, want a %s.x release", v, N8nMinimum)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
