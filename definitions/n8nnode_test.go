package definitions

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/imgflow/imgflow/catalog"
)

// The n8n node reads its operations and fields from the committed
// catalog.json; a catalog change that is not regenerated would leave the
// node offering yesterday's fields.
func TestN8nNodeCatalogIsAFreshRender(t *testing.T) {
	want, err := N8nNodeCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(N8nNodeCatalogPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(N8nNodeCatalogPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(N8nNodeCatalogPath)
	if err != nil {
		t.Fatalf("%s is not committed (%v); regenerate with: go run . definitions --out definitions", N8nNodeCatalogPath, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from catalog.Catalog; regenerate with: go run . definitions --out definitions", N8nNodeCatalogPath)
	}
}

// Every input field of every operation reaches the node file under the
// name the API takes, so the node sends what the server reads.
func TestN8nNodeCatalogCarriesEveryField(t *testing.T) {
	data, err := N8nNodeCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Auth struct {
			Header   string `json:"header"`
			TestPath string `json:"testPath"`
		} `json:"auth"`
		Operations []struct {
			Key    string `json:"key"`
			Method string `json:"method"`
			Path   string `json:"path"`
			Inputs []struct {
				Key string `json:"key"`
				In  string `json:"in"`
			} `json:"inputs"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	c := catalog.Default()
	if doc.Auth.Header != c.Auth.Header || doc.Auth.TestPath != c.Auth.TestPath {
		t.Errorf("auth = %s %s, want %s %s", doc.Auth.Header, doc.Auth.TestPath, c.Auth.Header, c.Auth.TestPath)
	}
	if len(doc.Operations) != len(c.Operations()) {
		t.Fatalf("%d operations in the node file, catalog has %d", len(doc.Operations), len(c.Operations()))
	}
	for i, op := range c.Operations() {
		got := doc.Operations[i]
		if got.Key != op.Key || got.Method != op.Method || got.Path != op.Path {
			t.Errorf("operation %d = %s %s %s, want %s %s %s", i, got.Key, got.Method, got.Path, op.Key, op.Method, op.Path)
		}
		if len(got.Inputs) != len(op.Inputs) {
			t.Errorf("%s: %d inputs, want %d", op.Key, len(got.Inputs), len(op.Inputs))
			continue
		}
		for j, f := range op.Inputs {
			want := f.In
			if want == "" {
				want = catalog.InBody
			}
			if got.Inputs[j].Key != f.Key || got.Inputs[j].In != want {
				t.Errorf("%s input %d = %s in %s, want %s in %s", op.Key, j, got.Inputs[j].Key, got.Inputs[j].In, f.Key, want)
			}
		}
	}
}
