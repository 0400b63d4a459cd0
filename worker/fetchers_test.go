package worker

import (
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
)

func TestFetchersDefaultToOnePerSixteenSlots(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ concurrency, fetchers, want int }{
		{0, 0, 1},    // the default Concurrency of 10
		{16, 0, 1},   // one per 16 slots
		{64, 0, 4},   // one per 16 slots
		{500, 0, 4},  // at most 4 by default
		{3, 8, 3},    // never more than the slots
		{64, 2, 2},   // as set
		{64, 16, 16}, // as set, past the default's cap
	} {
		cfg := h.cfg
		cfg.Concurrency, cfg.Fetchers = tc.concurrency, tc.fetchers
		got, err := cfg.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got.Fetchers != tc.want {
			t.Errorf("Concurrency %d, Fetchers %d: expected %d fetchers, got %d", tc.concurrency, tc.fetchers, tc.want, got.Fetchers)
		}
	}
}

// Each fetcher is an asynq server of its own that shares the worker's
// slots; with several of them idle, each holds a dequeue, and jobs that
// arrive together start on wake-ups (with an hour between polls, nothing
// else would start them).
func TestFetchersShareTheSlotsAndStartOnWakeUps(t *testing.T) {
	asynqOnly(t, "TestFairDispatchRunsEveryJobOnceAndLeavesNothing")
	h := newHarness(t)
	h.cfg.Concurrency, h.cfg.Fetchers = 5, 2
	h.cfg.IdleWait = time.Hour
	h.cfg.TaskCheckInterval = time.Second
	h.start()
	inspector := asynq.NewInspectorFromRedisClient(h.redis.Client)
	var slots []int
	deadline := time.Now().Add(10 * time.Second)
	for len(slots) != 2 && time.Now().Before(deadline) {
		slots = slots[:0]
		servers, err := inspector.Servers()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range servers {
			if _, ours := s.Queues[h.redis.Queue()]; ours {
				slots = append(slots, s.Concurrency)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(slots) != 2 || slots[0]+slots[1] != 5 {
		t.Fatalf("expected 2 asynq servers sharing 5 slots, got %v", slots)
	}
	time.Sleep(200 * time.Millisecond) // both dequeues held
	var jobs []*connector.Job
	for range 6 {
		jobs = append(jobs, h.submitURLJob(""))
	}
	for _, job := range jobs {
		h.waitJob(job.ID, "completed", func(j *connector.Job) bool { return j.Status == connector.StatusCompleted })
	}
}
