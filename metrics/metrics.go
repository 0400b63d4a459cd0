// Package metrics is imgflow's Prometheus instrumentation: HTTP requests by
// route, jobs created and finished, calls of the compression API, webhook
// deliveries and the sizes of the asynq queues. It keeps its own registry,
// so tests and several instances in one process never collide, and it only
// ever labels by route pattern, status, code or outcome: never by raw URL,
// key or anything a caller chooses.
package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// latencyBuckets (seconds) reach past the API's longest answer: a
// POST /v1/jobs?wait=25 holds up to 25 s.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 60}

// Metrics holds imgflow's collectors and the registry they live in. Its
// methods are safe for concurrent use. It implements worker.Observer
// (checked in its tests, so that the API may import this package without
// importing the worker).
type Metrics struct {
	reg *prometheus.Registry
	log *slog.Logger

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	jobsCreated   *prometheus.CounterVec
	jobsCompleted prometheus.Counter
	jobsFailed    *prometheus.CounterVec
	// jobsSystemFailed counts failed jobs that were not the caller's
	// mistake (connector.ErrorCode.CallersMistake): the dead-letter alert's rate.
	jobsSystemFailed *prometheus.CounterVec
	queueWait        prometheus.Histogram

	upstreamCalls    *prometheus.CounterVec
	upstreamDuration *prometheus.HistogramVec

	deliveries        *prometheus.CounterVec
	endpointsDisabled *prometheus.CounterVec

	chargeUncertain prometheus.Counter
	dedupe          dedupeMetrics
}

// New returns Metrics with every imgflow metric registered, plus the Go
// runtime and process collectors. logger receives scrape errors (for
// instance Redis down while reading queue sizes); nil means slog.Default().
func New(logger *slog.Logger) *Metrics {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Metrics{reg: prometheus.NewRegistry(), log: logger}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "imgflow_http_requests_total",
		Help: "HTTP requests answered, by method, route pattern and status.",
	}, []string{"method", "route", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "imgflow_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by method and route pattern (includes ?wait).",
		Buckets: latencyBuckets,
	}, []string{"method", "route"})
	m.jobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "imgflow_jobs_created_total",
		Help: "Compress jobs accepted by POST /v1/jobs, by input kind (url, base64, upload; json when the server does not say).",
	}, []string{"input"})
	m.jobsCompleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "imgflow_jobs_completed_total",
		Help: "Jobs that reached status completed.",
	})
	m.jobsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "imgflow_jobs_failed_total",
		Help: "Jobs that reached status failed, by error code.",
	}, []string{"code"})
	m.jobsSystemFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "imgflow_jobs_system_failed_total",
		Help: "Jobs that failed for a system fault (not the caller's mistake), by error code; their tasks stay in the queue's archive.",
	}, []string{"code"})
	m.queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "imgflow_job_queue_wait_seconds",
		Help:    "Time from a job's creation to the start of a compress run.",
		Buckets: latencyBuckets,
	})
	m.upstreamCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "imgflow_upstream_requests_total",
		Help: "Calls of the compression API, by endpoint (compress, validate, health) and status (the HTTP status, or error when it did not answer).",
	}, []string{"endpoint", "status"})
	m.upstreamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "imgflow_upstream_request_duration_seconds",
		Help:    "Duration of calls of the compression API, by endpoint.",
		Buckets: latencyBuckets,
	}, []string{"endpoint"})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "imgflow_deliveries_total",
		Help: "Callback and hook delivery attempts, by outcome: delivered, retry, failed (last attempt), gone (410), dropped (job or hook gone, endpoint disabled), deferred (put off by the endpoint's pause or rate).",
	}, []string{"outcome"})
	// Known outcomes start at 0, so rate() and alerts work before the first event.
	for _, o := range []string{"delivered", "retry", "failed", "gone", "dropped", "deferred"} {
		m.deliveries.WithLabelValues(o)
	}

	m.endpointsDisabled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "imgflow_webhook_endpoints_disabled_total",
		Help: "Delivery endpoints disabled, by kind (hook, callback) and reason (gone: answered 410; failing: every attempt failed for IMGFLOW_HOOK_DISABLE_AFTER).",
	}, []string{"kind", "reason"})
	for _, kind := range []string{"hook", "callback"} {
		for _, reason := range []string{"gone", "failing"} {
			m.endpointsDisabled.WithLabelValues(kind, reason)
		}
	}

	m.chargeUncertain = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "imgflow_upstream_charge_uncertain_total",
		Help: "Calls of the compression API made for a job whose earlier call never got an answer (worker killed mid-call, or a timeout): each may be one credit charged twice.",
	})

	m.reg.MustRegister(
		m.httpRequests, m.httpDuration,
		m.jobsCreated, m.jobsCompleted, m.jobsFailed, m.jobsSystemFailed, m.queueWait,
		m.upstreamCalls, m.upstreamDuration,
		m.deliveries, m.endpointsDisabled, m.chargeUncertain,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.dedupe = newDedupeMetrics(m.reg)
	return m
}

// Registry is where the metrics live, for adding collectors or for tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format (GET /metrics).
// A collector that fails (Redis down while reading queue sizes) is logged
// and left out; the rest of the scrape is still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      scrapeLog{m.log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// JobCreated counts one job accepted by the API, by input kind (url,
// base64, upload); the server's OnJobCreated hook calls it.
func (m *Metrics) JobCreated(input string) {
	m.jobsCreated.WithLabelValues(input).Inc()
}

// scrapeLog adapts slog to promhttp's error log.
type scrapeLog struct{ log *slog.Logger }

func (l scrapeLog) Println(v ...any) {
	l.log.Warn("metrics scrape", "error", fmt.Sprint(v...))
}
