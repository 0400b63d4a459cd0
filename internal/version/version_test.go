package version_test

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/imgflow/imgflow/internal/version"
)

// The binary, the MCP registry entry and the Helm chart name one version:
// server.json's version and the chart's appVersion equal VERSION.
func TestServerJSONAndTheChartNameTheBinarysVersion(t *testing.T) {
	v := version.String()
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("VERSION is %q, want MAJOR.MINOR.PATCH", v)
	}
	var server struct {
		Version string `json:"version"`
	}
	b, err := os.ReadFile("../../server.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &server); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	if server.Version != v {
		t.Errorf("server.json version %q, VERSION %q: set one to the other", server.Version, v)
	}
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	b, err = os.ReadFile("../../deploy/helm/imgflow/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatalf("Chart.yaml: %v", err)
	}
	if chart.AppVersion != v {
		t.Errorf("deploy/helm/imgflow/Chart.yaml appVersion %q, VERSION %q: set one to the other", chart.AppVersion, v)
	}
}
