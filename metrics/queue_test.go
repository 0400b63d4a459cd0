package metrics_test

import (
	"testing"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/metrics"
)

func TestQueueCollectorReportsEnqueuedTasks(t *testing.T) {
	r := redistest.New(t)
	opt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	defer client.Close()
	inspector := asynq.NewInspector(opt)
	defer inspector.Close()

	m := metrics.New(nil)
	empty := r.Queue() + "-empty" // never used: reported as zeros, not an error
	m.WatchQueues(inspector, r.Queue(), empty)
	for range 2 {
		if _, err := client.Enqueue(asynq.NewTask("compress", []byte(`{}`)), asynq.Queue(r.Queue())); err != nil {
			t.Fatalf("enqueue: %v", err)
		}
	}
	if _, err := client.Enqueue(asynq.NewTask("deliver", nil), asynq.Queue(r.Queue()), asynq.ProcessIn(3600e9)); err != nil {
		t.Fatalf("enqueue scheduled: %v", err)
	}

	got := scrape(t, m)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": r.Queue(), "state": "pending"}, 2)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": r.Queue(), "state": "scheduled"}, 1)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": r.Queue(), "state": "active"}, 0)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": empty, "state": "pending"}, 0)
	if _, ok := got.value("imgflow_queue_latency_seconds", map[string]string{"queue": r.Queue()}); !ok {
		t.Errorf("imgflow_queue_latency_seconds missing for %s", r.Queue())
	}
	got.expect(t, "imgflow_redis_up", nil, 1)
}

func TestQueueCollectorFailureKeepsTheRestOfTheScrape(t *testing.T) {
	opt := asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 200e6}
	inspector := asynq.NewInspector(opt)
	defer inspector.Close()
	m := metrics.New(nil)
	m.WatchQueues(inspector, "imgflow")
	m.JobFinished("completed", "")

	got := scrape(t, m) // fails the test unless the status is 200
	got.expect(t, "imgflow_jobs_completed_total", nil, 1)
	if _, ok := got.value("imgflow_queue_tasks", nil); ok {
		t.Errorf("queue sizes reported although Redis is unreachable")
	}
	got.expect(t, "imgflow_redis_up", nil, 0)
}

func TestQueueCollectorReadsAQueueOfItsOwnSizes(t *testing.T) {
	r := redistest.New(t)
	opt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspector(opt)
	defer inspector.Close()
	m := metrics.New(nil)
	fair := r.Queue()
	m.WatchQueuesWith(inspector, map[string]metrics.QueueSizes{fair: func() (asynq.QueueInfo, error) {
		return asynq.QueueInfo{Pending: 7, Active: 3, Retry: 2}, nil
	}}, fair, fair+"-deliveries")
	got := scrape(t, m)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": fair, "state": "pending"}, 7)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": fair, "state": "active"}, 3)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": fair, "state": "retry"}, 2)
	got.expect(t, "imgflow_queue_tasks", map[string]string{"queue": fair + "-deliveries", "state": "pending"}, 0)
}
