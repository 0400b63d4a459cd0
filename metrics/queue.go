package metrics

import (
	"slices"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// WatchQueues adds the sizes of the named asynq queues to the metrics, read
// from Redis through inspector at each scrape:
// imgflow_queue_tasks{queue,state} (pending, active, scheduled, retry,
// archived) and imgflow_queue_latency_seconds{queue} (age of the oldest
// pending task), and imgflow_redis_up (1 when that read reached Redis, 0
// when it failed: the alert for a Redis the API cannot reach). The caller
// keeps inspector open as long as the metrics are
// served. Every serve process may watch the same queue; take max() rather
// than sum() across instances.
func (m *Metrics) WatchQueues(inspector *asynq.Inspector, queues ...string) {
	m.WatchQueuesWith(inspector, nil, queues...)
}

// QueueSizes reads the sizes of a queue that is not asynq's (fair
// dispatch's compress jobs): pending, active and retry as asynq counts them.
type QueueSizes func() (asynq.QueueInfo, error)

// WatchQueuesWith is WatchQueues with the queues of sizes read by their
// own function rather than from asynq.
func (m *Metrics) WatchQueuesWith(inspector *asynq.Inspector, sizes map[string]QueueSizes, queues ...string) {
	m.reg.MustRegister(&queueCollector{inspector: inspector, queues: queues, sizes: sizes})
}

var (
	queueTasksDesc = prometheus.NewDesc("imgflow_queue_tasks",
		"Tasks in an asynq queue, by state (pending, active, scheduled, retry, archived).",
		[]string{"queue", "state"}, nil)
	queueLatencyDesc = prometheus.NewDesc("imgflow_queue_latency_seconds",
		"Age of the oldest pending task of an asynq queue; 0 when none is pending.",
		[]string{"queue"}, nil)
	redisUpDesc = prometheus.NewDesc("imgflow_redis_up",
		"1 when this process read the queue sizes from Redis at this scrape, 0 when Redis did not answer.",
		nil, nil)
)

// queueCollector reads queue sizes from Redis on each scrape.
type queueCollector struct {
	inspector *asynq.Inspector
	queues    []string
	sizes     map[string]QueueSizes // queues read otherwise
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueTasksDesc
	ch <- queueLatencyDesc
	ch <- redisUpDesc
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	// A queue nothing was ever enqueued on is unknown to asynq; it is
	// reported as empty rather than as an error.
	known, err := q.inspector.Queues()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(redisUpDesc, prometheus.GaugeValue, 0)
		ch <- prometheus.NewInvalidMetric(queueTasksDesc, err)
		return
	}
	up := 1.0
	defer func() { ch <- prometheus.MustNewConstMetric(redisUpDesc, prometheus.GaugeValue, up) }()
	for _, name := range q.queues {
		var info asynq.QueueInfo
		if read, ok := q.sizes[name]; ok {
			got, err := read()
			if err != nil {
				up = 0
				ch <- prometheus.NewInvalidMetric(queueTasksDesc, err)
				continue
			}
			info = got
		} else if slices.Contains(known, name) {
			got, err := q.inspector.GetQueueInfo(name)
			if err != nil {
				up = 0
				ch <- prometheus.NewInvalidMetric(queueTasksDesc, err)
				continue
			}
			info = *got
		}
		for _, s := range []struct {
			state string
			n     int
		}{
			{"pending", info.Pending},
			{"active", info.Active},
			{"scheduled", info.Scheduled},
			{"retry", info.Retry},
			{"archived", info.Archived},
		} {
			ch <- prometheus.MustNewConstMetric(queueTasksDesc, prometheus.GaugeValue, float64(s.n), name, s.state)
		}
		ch <- prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, info.Latency.Seconds(), name)
	}
}
