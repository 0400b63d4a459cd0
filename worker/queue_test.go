package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
)

func TestEnqueueCompressTwiceQueuesOneTaskCarryingOnlyTheJobID(t *testing.T) {
	asynqOnly(t, "TestFairEnqueueOfAKnownJobIsANoOp")
	h := newHarness(t)
	ctx := context.Background()
	for range 2 {
		if err := h.queue.EnqueueCompress(ctx, "job-1", ""); err != nil {
			t.Fatalf("EnqueueCompress: expected nil (a duplicate is a no-op), got %v", err)
		}
	}
	insp := asynq.NewInspector(h.cfg.RedisConnOpt)
	defer insp.Close()
	tasks, err := insp.ListPendingTasks(h.redis.Queue())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("pending tasks: expected 1, got %d", len(tasks))
	}
	task := tasks[0]
	if task.ID != "job-1" || task.Type != TypeCompress || string(task.Payload) != `{"job_id":"job-1"}` ||
		task.MaxRetry != DefaultMaxCompressRetries || task.Timeout < time.Second || task.Retention < time.Minute {
		t.Errorf("task: expected id job-1, %s, payload {\"job_id\":\"job-1\"}, 8 retries, timeout >= 1s, retention, got %s %s %s retry %d timeout %v retention %v",
			TypeCompress, task.ID, task.Type, task.Payload, task.MaxRetry, task.Timeout, task.Retention)
	}
}

func TestEnqueueDeliveryRetriesOnceLessThanTheScheduleIsLong(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	d := connector.Delivery{ID: "msg_j_cb", JobID: "j", Event: connector.EventJobCompleted}
	for range 2 {
		if err := h.queue.EnqueueDelivery(ctx, d); err != nil {
			t.Fatalf("EnqueueDelivery: expected nil, got %v", err)
		}
	}
	insp := asynq.NewInspector(h.cfg.RedisConnOpt)
	defer insp.Close()
	tasks, err := insp.ListPendingTasks(DeliveryQueue(h.redis.Queue()))
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].ID != d.ID || tasks[0].MaxRetry != len(DefaultDeliverySchedule)-1 {
		t.Fatalf("expected one task %s with %d retries (one attempt per schedule entry), got %+v", d.ID, len(DefaultDeliverySchedule)-1, tasks)
	}
}

func TestEnqueueWithRedisDownIsUnavailableWithRetryAfter(t *testing.T) {
	client := asynq.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond})
	defer client.Close()
	q := NewQueue(client, "")
	err := q.EnqueueCompress(context.Background(), "job-1", "")
	var e *connector.Error
	if !errors.As(err, &e) || e.Code != connector.EUNAVAILABLE || e.RetryAfter <= 0 {
		t.Fatalf("expected unavailable with a Retry-After, got %v", err)
	}
	if err := q.EnqueueDelivery(context.Background(), connector.Delivery{ID: "m"}); connector.ErrorCodeOf(err) != connector.EUNAVAILABLE {
		t.Errorf("EnqueueDelivery: expected unavailable, got %v", err)
	}
}

func TestDeliveryDelayFollowsTheScheduleAndHonoursRetryAfter(t *testing.T) {
	s := []time.Duration{0, 5 * time.Second, 5 * time.Minute}
	for _, tc := range []struct {
		retried int
		err     error
		want    time.Duration
	}{
		{0, errors.New("500"), 5 * time.Second},
		{1, errors.New("500"), 5 * time.Minute},
		{7, errors.New("500"), 5 * time.Minute}, // past the end: the last delay
		{0, &retryAfterError{err: errors.New("429"), after: time.Minute}, time.Minute},
		{1, &retryAfterError{err: errors.New("503"), after: time.Second}, 5 * time.Minute}, // never shorter
		{0, &retryAfterError{err: errors.New("503"), after: 1000 * time.Hour}, maxRetryAfter},
	} {
		if got := deliveryDelay(s, tc.retried, tc.err); got != tc.want {
			t.Errorf("after %d retries with %v: expected %v, got %v", tc.retried, tc.err, tc.want, got)
		}
	}
}

func TestCompressBackoffDoublesFromOneSecondUpToAMinute(t *testing.T) {
	for n, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 3: 8 * time.Second, 6: time.Minute, 40: time.Minute} {
		got := backoff(n)
		if got < want || got > want+want/4 {
			t.Errorf("backoff(%d): expected %v plus up to 25%% jitter, got %v", n, want, got)
		}
	}
}

func TestResultFilenameTakesTheOutputFormatsExtension(t *testing.T) {
	for _, tc := range []struct{ name, mime, want string }{
		{"photo.png", "image/png", "photo.png"},
		{"photo.jpeg", "image/jpeg", "photo.jpeg"},
		{"photo.png", "image/webp", "photo.webp"},
		{"", "image/avif", "image.avif"},
		{`C:\Users\me\cat.JPG`, "image/jpeg", "cat.JPG"},
		{"../../etc/passwd", "image/png", "passwd.png"},
	} {
		if got := filenameFor(tc.name, tc.mime); got != tc.want {
			t.Errorf("filenameFor(%q, %s): expected %q, got %q", tc.name, tc.mime, tc.want, got)
		}
	}
}

func TestNewSaysWhatIsMissing(t *testing.T) {
	h := newHarness(t)
	cfg := h.cfg
	cfg.PublicURL = ""
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "PublicURL") {
		t.Errorf("expected an error naming PublicURL, got %v", err)
	}
	cfg = h.cfg
	cfg.Keyring = nil
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Keyring") {
		t.Errorf("expected an error naming Keyring, got %v", err)
	}
}

// An idle worker starts a job on the wake-up its enqueue publishes, and a
// retry made due by its own asynq, without waiting to poll: here it would
// poll only once an hour.
func TestIdleWorkerStartsJobsOnWakeUpsNotPolls(t *testing.T) {
	h := newHarness(t)
	h.cfg.IdleWait = time.Hour
	h.cfg.TaskCheckInterval = time.Second // asynq's sleep on shutdown only
	// The 4th upstream call answers 503: that job is retried after the
	// test's 10 ms backoff, when the forwarder moves it back.
	h.comp.setFailures(nil, nil, nil, &connector.Error{Code: connector.EUPSTREAM, Message: "Service unavailable", UpstreamStatus: 503, Retryable: true})
	w, _ := h.start()
	for range 4 {
		job := h.submitURLJob("")
		h.waitJob(job.ID, "completed", func(j *connector.Job) bool { return j.Status == connector.StatusCompleted })
	}
	if got := h.comp.Calls(); got != 5 {
		t.Fatalf("upstream calls = %d, want 5 (4 jobs, one retried)", got)
	}
	// With an hour between polls, only wake-ups can have started them
	// (the first job may be found by the worker's first dequeue). The
	// count is asynq's fetchers'; fair dispatch's runner has no other way.
	if onFair() {
		return
	}
	if got := w.wk.woken.Load(); got < 4 {
		t.Fatalf("tasks started by a wake-up = %d, want at least 4 of 5", got)
	}
}
