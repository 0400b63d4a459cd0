package metrics

import (
	"time"

	"github.com/imgflow/imgflow/connector"
)

// JobStarted records how long a job waited in the queue before a compress
// attempt began (worker.Observer).
func (m *Metrics) JobStarted(queued time.Duration) {
	m.queueWait.Observe(queued.Seconds())
}

// JobFinished counts a job that reached "completed" or "failed"; code is the
// error code of a failed job (worker.Observer).
func (m *Metrics) JobFinished(status, code string) {
	switch status {
	case "completed":
		m.jobsCompleted.Inc()
	case "failed":
		if code == "" {
			code = "unknown"
		}
		m.jobsFailed.WithLabelValues(code).Inc()
		if !connector.ErrorCode(code).CallersMistake() {
			m.jobsSystemFailed.WithLabelValues(code).Inc()
		}
	}
}

// UpstreamCall is part of worker.Observer and records nothing: calls of the
// compression API are counted by the Compressor decorator, which knows the
// endpoint and also sees the API's key checks. Counting here as well would
// count every compress call twice. Wrap the worker's Compressor with
// Metrics.Compressor instead.
func (m *Metrics) UpstreamCall(status int, d time.Duration) {}

// DeliveryDone counts one delivery attempt by its outcome (worker.Observer).
func (m *Metrics) DeliveryDone(outcome string) {
	m.deliveries.WithLabelValues(outcome).Inc()
}

// EndpointDisabled counts a delivery endpoint disabled
// (worker.EndpointObserver).
func (m *Metrics) EndpointDisabled(kind, reason string) {
	m.endpointsDisabled.WithLabelValues(kind, reason).Inc()
}

// ChargeUncertain counts a compression that may charge a job a second
// credit (worker.Observer): an earlier call for it never got an answer.
func (m *Metrics) ChargeUncertain() { m.chargeUncertain.Inc() }
