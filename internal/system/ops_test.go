package system_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// The public port carries the API, the console, /mcp and file links, and
// /health for scripts; /metrics, /ready and the queue dashboard are on the
// ops listener only, so an Ingress to the API never publishes them.
func TestMetricsReadyAndQueuesAreOnlyOnTheOpsListener(t *testing.T) {
	s := systemtest.Start(t, func(o *systemtest.Options) { o.AdminToken = "ops-admin-token-0123456789" })
	for _, path := range []string{"/metrics", "/ready", "/admin/queues?token=ops-admin-token-0123456789"} {
		if st, _, body := s.Request("GET", path, "", nil, nil); st != http.StatusNotFound {
			t.Errorf("public GET %s: %d %.200s, want 404", path, st, body)
		}
		if st, body := s.OpsGet(path); st != http.StatusOK && st != http.StatusSeeOther && st != http.StatusFound {
			t.Errorf("ops GET %s: %d %.200s, want it served", path, st, body)
		}
	}
	if st, _, _ := s.Request("GET", "/health", "", nil, nil); st != http.StatusOK {
		t.Errorf("public GET /health: %d, want 200", st)
	}
	if st, body := s.OpsGet("/metrics"); st != http.StatusOK || !strings.Contains(body, "imgflow_") {
		t.Errorf("ops /metrics: %d %.200s, want imgflow's metrics", st, body)
	}
}

// With the compression API down, readiness still passes (kubelet keeps
// the pods on the Service) and polls of finished jobs answer 200; with
// Redis failing, readiness fails while liveness holds.
func TestReadinessFollowsRedisNotTheCompressionAPI(t *testing.T) {
	var upstreamDown atomic.Bool
	s := systemtest.Start(t, func(o *systemtest.Options) {
		target, err := url.Parse(strings.TrimSuffix(o.UpstreamURL, "/api"))
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if upstreamDown.Load() {
				if hj, ok := w.(http.Hijacker); ok { // a stopped API: the connection drops
					if c, _, err := hj.Hijack(); err == nil {
						c.Close()
						return
					}
				}
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(gate.Close)
		o.UpstreamURL = gate.URL + "/api"
	})
	auth := map[string]string{"X-API-Key": s.Key}
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(`{"image_url":"`+s.Samples+`/photo.png"}`), auth)
	job := s.ExpectCompressed(st, body, "image/png")

	upstreamDown.Store(true)
	if st, body := s.OpsGet("/ready"); st != http.StatusOK {
		t.Errorf("ops /ready with the compression API down: %d %s, want 200", st, body)
	}
	if st, _, body := s.Request("GET", "/v1/jobs/"+job.ID, "", nil, auth); st != http.StatusOK {
		t.Errorf("poll with the compression API down: %d %.300s, want 200", st, body)
	}

	if s.Redis.Mini == nil {
		return // a real Redis (REDIS_URL) cannot be made to fail here
	}
	s.Redis.Mini.SetError("LOADING Redis is loading the dataset in memory")
	defer s.Redis.Mini.SetError("")
	if st, body := s.OpsGet("/ready"); st != http.StatusServiceUnavailable || !strings.Contains(body, "redis") {
		t.Errorf("ops /ready with Redis failing: %d %s, want 503 naming redis", st, body)
	}
	if st, body := s.OpsGet("/health"); st != http.StatusOK {
		t.Errorf("ops /health with Redis failing: %d %s, want 200 (the process answers)", st, body)
	}
}
