package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/metrics"
)

// api is a stand-in for the server's routes with the metrics middleware.
func api(m *metrics.Metrics) *echo.Echo {
	e := echo.New()
	e.Use(m.Echo())
	e.POST("/v1/jobs", func(c echo.Context) error {
		if c.QueryParam("wait") != "" {
			return c.JSON(http.StatusOK, map[string]string{"status": "completed"})
		}
		return c.JSON(http.StatusAccepted, map[string]string{"status": "queued"})
	})
	e.GET("/v1/jobs/:id", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusNotFound, "not found")
	})
	return e
}

func do(t *testing.T, h http.Handler, method, target, contentType string) int {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader("{}"))
	if contentType != "" {
		req.Header.Set(echo.HeaderContentType, contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestEchoMiddlewareCountsRequestsByRoutePatternAndStatus(t *testing.T) {
	m := metrics.New(nil)
	e := api(m)
	for _, id := range []string{"a", "b", "c"} {
		if code := do(t, e, http.MethodGet, "/v1/jobs/"+id+"?secret=x", ""); code != http.StatusNotFound {
			t.Fatalf("GET /v1/jobs/%s: status %d, want 404", id, code)
		}
	}
	do(t, e, http.MethodPost, "/v1/jobs", echo.MIMEApplicationJSON)
	do(t, e, http.MethodGet, "/no/such/path/1", "")
	do(t, e, http.MethodGet, "/no/such/path/2", "")

	got := scrape(t, m)
	got.expect(t, "imgflow_http_requests_total", map[string]string{"method": "GET", "route": "/v1/jobs/:id", "status": "404"}, 3)
	got.expect(t, "imgflow_http_requests_total", map[string]string{"method": "POST", "route": "/v1/jobs", "status": "202"}, 1)
	got.expect(t, "imgflow_http_requests_total", map[string]string{"method": "GET", "route": "unmatched", "status": "404"}, 2)
	got.expect(t, "imgflow_http_request_duration_seconds", map[string]string{"method": "GET", "route": "/v1/jobs/:id"}, 3)
	for _, mf := range got["imgflow_http_requests_total"].GetMetric() {
		for _, l := range mf.GetLabel() {
			if strings.Contains(l.GetValue(), "secret") || strings.Contains(l.GetValue(), "/no/such") {
				t.Errorf("label %s=%q carries the raw URL; only route patterns may be labels", l.GetName(), l.GetValue())
			}
		}
	}
}

func TestJobCreatedCountsByInputKind(t *testing.T) {
	m := metrics.New(nil)
	for _, kind := range []string{"url", "url", "base64", "upload"} {
		m.JobCreated(kind)
	}
	got := scrape(t, m)
	got.expect(t, "imgflow_jobs_created_total", map[string]string{"input": "url"}, 2)
	got.expect(t, "imgflow_jobs_created_total", map[string]string{"input": "base64"}, 1)
	got.expect(t, "imgflow_jobs_created_total", map[string]string{"input": "upload"}, 1)
}

func TestEchoMiddlewareDoesNotCountRefusedJobs(t *testing.T) {
	m := metrics.New(nil)
	e := echo.New()
	e.Use(m.Echo())
	e.POST("/v1/jobs", func(c echo.Context) error {
		return echo.NewHTTPError(http.StatusUnauthorized, "bad key")
	})
	if code := do(t, e, http.MethodPost, "/v1/jobs", echo.MIMEApplicationJSON); code != http.StatusUnauthorized {
		t.Fatalf("status %d, want the handler's 401", code)
	}
	got := scrape(t, m)
	got.expect(t, "imgflow_http_requests_total", map[string]string{"route": "/v1/jobs", "status": "401"}, 1)
	if v, ok := got.value("imgflow_jobs_created_total", nil); ok && v != 0 {
		t.Errorf("a refused job was counted as created (%v)", v)
	}
}

func TestHandlerServesGoRuntimeMetrics(t *testing.T) {
	got := scrape(t, metrics.New(nil))
	if _, ok := got.value("go_goroutines", nil); !ok {
		t.Errorf("go_goroutines missing from /metrics")
	}
	got.expect(t, "imgflow_deliveries_total", map[string]string{"outcome": "delivered"}, 0)
}
