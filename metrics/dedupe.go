package metrics

import "github.com/prometheus/client_golang/prometheus"

// dedupeMetrics count the jobs that completed from an identical job's
// result (worker/dedupe.go) and the credits that saved.
type dedupeMetrics struct {
	jobs         *prometheus.CounterVec
	creditsSaved prometheus.Counter
}

func newDedupeMetrics(reg *prometheus.Registry) dedupeMetrics {
	d := dedupeMetrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "imgflow_jobs_deduplicated_total",
			Help: "Jobs completed from the stored result of an identical job of the same key (same image bytes and options), without calling the compression API; waited=true when the job waited for an identical job being compressed at the same time.",
		}, []string{"waited"}),
		creditsSaved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "imgflow_credits_saved_total",
			Help: "Credits of the compression API not spent because a job completed from an identical job's result.",
		}),
	}
	d.jobs.WithLabelValues("false")
	d.jobs.WithLabelValues("true")
	reg.MustRegister(d.jobs, d.creditsSaved)
	return d
}

// JobDeduplicated counts a job completed from an identical job's result
// (worker.DedupeObserver).
func (m *Metrics) JobDeduplicated(waited bool, creditsSaved int) {
	label := "false"
	if waited {
		label = "true"
	}
	m.dedupe.jobs.WithLabelValues(label).Inc()
	m.dedupe.creditsSaved.Add(float64(creditsSaved))
}
