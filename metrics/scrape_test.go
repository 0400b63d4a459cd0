package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/imgflow/imgflow/metrics"
)

// exposition is one scrape of /metrics, parsed.
type exposition map[string]*dto.MetricFamily

// scrape GETs m.Handler() as Prometheus would and parses the text format.
func scrape(t *testing.T, m *metrics.Metrics) exposition {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, want 200; body:\n%s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("GET /metrics is not the Prometheus text format: %v", err)
	}
	return fams
}

// value is the counter, gauge or histogram count of the series of name whose
// labels include want; ok is false when there is no such series.
func (e exposition) value(name string, want map[string]string) (v float64, ok bool) {
	fam := e[name]
	if fam == nil {
		return 0, false
	}
series:
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if got[k] != w {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// expect fails t unless the series exists with value want.
func (e exposition) expect(t *testing.T, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := e.value(name, labels)
	if !ok {
		t.Errorf("%s%v: no such series in /metrics", name, labels)
		return
	}
	if got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}
