package chartcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// exported is every metric name the metrics package registers.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repoRoot, "metrics", "*.go"))
	names := map[string]bool{}
	re := regexp.MustCompile(`(?:Name:\s*|NewDesc\()\s*"(imgflow_[a-z_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, _ := os.ReadFile(f)
		for _, m := range re.FindAllSubmatch(src, -1) {
			names[string(m[1])] = true
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %d metric names in metrics/*.go", len(names))
	}
	return names
}

// usedMetrics are the imgflow_ names in a query, histogram suffixes cut.
func usedMetrics(expr string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`imgflow_[a-z_]+`).FindAllString(expr, -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			m = strings.TrimSuffix(m, suffix)
		}
		out = append(out, m)
	}
	return out
}

func alertRules(t *testing.T) []monitoringv1.Rule {
	t.Helper()
	raw, err := os.ReadFile(rulesFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(raw, &spec); err != nil {
		t.Fatal(err)
	}
	var rules []monitoringv1.Rule
	for _, g := range spec.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// runbookURL is the chart's default prometheusRule.runbookURL.
func runbookURL(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "helm", "imgflow", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		PrometheusRule struct {
			RunbookURL string `json:"runbookURL"`
		} `json:"prometheusRule"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil || !strings.HasPrefix(v.PrometheusRule.RunbookURL, "https://") {
		t.Fatalf("values.yaml: prometheusRule.runbookURL %q (%v): want an https URL", v.PrometheusRule.RunbookURL, err)
	}
	return v.PrometheusRule.RunbookURL
}

// selectors are the imgflow_ series selectors of a query with their
// matchers ("" when a selector has none).
var selectors = regexp.MustCompile(`(imgflow_[a-z_]+)(\{[^}]*\})?`)

// Every alert queries metrics imgflow exports, of this release only (its
// namespace and ops Services), and its runbook_url is the runbook URL's
// anchor of a heading in docs/operations.md.
func TestAlertsUseExportedMetricsAndHaveRunbooks(t *testing.T) {
	names := exported(t)
	base := runbookURL(t)
	ops, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	scope := releaseSelector()
	for _, r := range alertRules(t) {
		for _, m := range usedMetrics(r.Expr.String()) {
			if !names[m] {
				t.Errorf("%s queries %s, which metrics/*.go does not export", r.Alert, m)
			}
		}
		for _, sel := range selectors.FindAllStringSubmatch(r.Expr.String(), -1) {
			if !strings.Contains(sel[2], scope) {
				t.Errorf("%s: %s%s is not scoped to the release (%s)", r.Alert, sel[1], sel[2], scope)
			}
		}
		want := base + "#" + strings.ToLower(r.Alert)
		if r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
		}
		if !strings.Contains(string(ops), "\n#### "+r.Alert+"\n") {
			t.Errorf("%s has no runbook heading (#### %s) in docs/operations.md", r.Alert, r.Alert)
		}
	}
}

func TestDashboardUsesExportedMetrics(t *testing.T) {
	names := exported(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "grafana", "imgflow.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("deploy/grafana/imgflow.json: %v", err)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			for _, m := range usedMetrics(target.Expr) {
				used[m] = true
				if !names[m] {
					t.Errorf("panel %q queries %s, which metrics/*.go does not export", p.Title, m)
				}
			}
		}
	}
	// What the issue asks the dashboard to show.
	for _, m := range []string{"imgflow_jobs_completed_total", "imgflow_upstream_request_duration_seconds", "imgflow_queue_tasks",
		"imgflow_upstream_requests_total", "imgflow_credits_saved_total", "imgflow_deliveries_total"} {
		if !used[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
}
