package metrics_test

import (
	"testing"
	"time"

	"github.com/imgflow/imgflow/metrics"
	"github.com/imgflow/imgflow/worker"
)

var _ worker.Observer = (*metrics.Metrics)(nil)

func TestObserverCountsFinishedJobsAndDeliveries(t *testing.T) {
	m := metrics.New(nil)
	m.JobStarted(1500 * time.Millisecond)
	m.JobStarted(20 * time.Millisecond)
	m.JobFinished("completed", "")
	m.JobFinished("completed", "")
	m.JobFinished("failed", "insufficient_credits")
	m.JobFinished("failed", "upstream_error")
	m.JobFinished("failed", "upstream_error")
	m.DeliveryDone("delivered")
	m.DeliveryDone("retry")
	m.DeliveryDone("retry")
	m.DeliveryDone("gone")
	m.UpstreamCall(200, time.Second) // counted by the Compressor decorator instead
	m.ChargeUncertain()

	got := scrape(t, m)
	got.expect(t, "imgflow_job_queue_wait_seconds", nil, 2)
	got.expect(t, "imgflow_jobs_completed_total", nil, 2)
	got.expect(t, "imgflow_jobs_failed_total", map[string]string{"code": "insufficient_credits"}, 1)
	got.expect(t, "imgflow_jobs_failed_total", map[string]string{"code": "upstream_error"}, 2)
	got.expect(t, "imgflow_deliveries_total", map[string]string{"outcome": "delivered"}, 1)
	got.expect(t, "imgflow_deliveries_total", map[string]string{"outcome": "retry"}, 2)
	got.expect(t, "imgflow_deliveries_total", map[string]string{"outcome": "gone"}, 1)
	got.expect(t, "imgflow_deliveries_total", map[string]string{"outcome": "failed"}, 0)
	got.expect(t, "imgflow_upstream_charge_uncertain_total", nil, 1)
	if v, ok := got.value("imgflow_upstream_requests_total", nil); ok && v != 0 {
		t.Errorf("Observer.UpstreamCall counted an upstream call (%v); the decorator is the one place that counts them", v)
	}
}
