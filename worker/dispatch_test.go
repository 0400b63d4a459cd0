package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
)

func newTestFairQueue(t *testing.T, limit int) *fairQueue {
	t.Helper()
	r := redistest.New(t)
	return newFairQueue(r.Client, r.Queue(), limit)
}

func mustEnqueue(t *testing.T, q *fairQueue, id, owner string) {
	t.Helper()
	if err := q.enqueue(context.Background(), id, owner); err != nil {
		t.Fatal(err)
	}
}

func mustDispatch(t *testing.T, q *fairQueue, lease time.Duration) *fairJob {
	t.Helper()
	jobs, _, err := q.dispatch(context.Background(), lease, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) == 0 {
		return nil
	}
	return jobs[0]
}

func TestFairDispatchGivesWeightedTurns(t *testing.T) {
	q := newTestFairQueue(t, 0)
	ctx := context.Background()
	weights := map[string]float64{"a": 1, "b": 2, "c": 4}
	for owner, w := range weights {
		if err := q.setKeyTurns(ctx, owner, w, 0); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			mustEnqueue(t, q, fmt.Sprintf("%s-%d", owner, i), owner)
		}
	}
	got := map[string]int{}
	for range 70 {
		j := mustDispatch(t, q, time.Minute)
		if j == nil {
			t.Fatal("no job dispatched while every key has ready work")
		}
		got[j.owner]++
	}
	// 70 turns at 1:2:4 are 10, 20, 40; stride scheduling is off by one at most.
	for owner, want := range map[string]int{"a": 10, "b": 20, "c": 40} {
		if d := got[owner] - want; d < -1 || d > 1 {
			t.Errorf("key %s got %d of 70 turns, want %d±1 (all: %v)", owner, got[owner], want, got)
		}
	}
}

func TestFairDispatchKeepsOrderWithinAKeyAndAlternatesKeys(t *testing.T) {
	q := newTestFairQueue(t, 0)
	for i := range 3 {
		mustEnqueue(t, q, fmt.Sprintf("flood-%d", i), "flood")
	}
	mustEnqueue(t, q, "quiet-0", "quiet")
	var order []string
	for {
		j := mustDispatch(t, q, time.Minute)
		if j == nil {
			break
		}
		order = append(order, j.jobID)
	}
	want := "[flood-0 quiet-0 flood-1 flood-2]"
	if fmt.Sprint(order) != want {
		t.Fatalf("dispatch order %v, want %s: the quiet key's job waits one turn, not the flood", order, want)
	}
}

// TestFairLateKeysStartAtTheClock: keys enter the ring at 0 and take the
// clock at their first turn, so keys arriving behind a flood that had 50
// turns share the next turns with it equally; on a dispatch that kept their
// 0 they would take 50 turns each before the flood got one.
func TestFairLateKeysStartAtTheClock(t *testing.T) {
	q := newTestFairQueue(t, 0)
	for i := range 200 {
		mustEnqueue(t, q, fmt.Sprintf("flood-%d", i), "flood")
	}
	for range 50 {
		mustDispatch(t, q, time.Minute)
	}
	for _, owner := range []string{"late-a", "late-b"} { // two at once: the clock is looked up
		for i := range 50 {
			mustEnqueue(t, q, fmt.Sprintf("%s-%d", owner, i), owner)
		}
	}
	got := map[string]int{}
	for range 30 {
		got[mustDispatch(t, q, time.Minute).owner]++
	}
	for _, owner := range []string{"flood", "late-a", "late-b"} {
		if d := got[owner] - 10; d < -1 || d > 1 {
			t.Errorf("key %s got %d of 30 turns, want 10±1 (all: %v)", owner, got[owner], got)
		}
	}
}

func TestFairDispatchEnforcesAKeysLimitAcrossWorkers(t *testing.T) {
	q := newTestFairQueue(t, 2)
	ctx := context.Background()
	for i := range 5 {
		mustEnqueue(t, q, fmt.Sprintf("j%d", i), "k")
	}
	a, b := mustDispatch(t, q, time.Minute), mustDispatch(t, q, time.Minute)
	if a == nil || b == nil {
		t.Fatal("the first two jobs were not dispatched")
	}
	if j := mustDispatch(t, q, time.Minute); j != nil {
		t.Fatalf("dispatched %s over the key's limit of 2", j.jobID)
	}
	if ok, err := q.ack(ctx, a, time.Time{}); !ok || err != nil {
		t.Fatalf("ack: %v %v", ok, err)
	}
	if j := mustDispatch(t, q, time.Minute); j == nil || j.jobID != "j2" {
		t.Fatalf("after one ended, dispatched %+v, want j2", j)
	}
	// A key's own limit overrides the default.
	if err := q.setKeyTurns(ctx, "k", 0, 3); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, q, "other", "other") // wakes the ring; k stays out until a run ends
	if j := mustDispatch(t, q, time.Minute); j == nil || j.owner != "other" {
		t.Fatalf("dispatched %+v, want the other key's job", j)
	}
	if ok, _ := q.ack(ctx, b, time.Time{}); !ok {
		t.Fatal("ack lost")
	}
	if j := mustDispatch(t, q, time.Minute); j == nil || j.jobID != "j3" {
		t.Fatalf("dispatched %+v, want j3", j)
	}
	if j := mustDispatch(t, q, time.Minute); j == nil || j.jobID != "j4" {
		t.Fatalf("dispatched %+v, want j4 (limit 3: two run)", j)
	}
}

func TestFairEnqueueOfAKnownJobIsANoOp(t *testing.T) {
	q := newTestFairQueue(t, 0)
	ctx := context.Background()
	mustEnqueue(t, q, "j", "k")
	mustEnqueue(t, q, "j", "k")
	j := mustDispatch(t, q, time.Minute)
	mustEnqueue(t, q, "j", "k") // running: still known
	if again := mustDispatch(t, q, time.Minute); again != nil {
		t.Fatalf("a second enqueue of a known job was dispatched: %+v", again)
	}
	if ok, _ := q.ack(ctx, j, time.Time{}); !ok {
		t.Fatal("ack lost")
	}
	known, _ := q.known(ctx, []string{"j"})
	if known[0] {
		t.Fatal("a finished job is still known")
	}
}

func TestFairLapsedLeaseRunsTheJobAgainOnce(t *testing.T) {
	q := newTestFairQueue(t, 1)
	ctx := context.Background()
	mustEnqueue(t, q, "j", "k")
	mustEnqueue(t, q, "j2", "k")
	stale := mustDispatch(t, q, -time.Second) // its worker died: the lease has lapsed
	if _, recovered, err := q.maintain(ctx); err != nil || recovered != 1 {
		t.Fatalf("maintain recovered %d (%v), want 1", recovered, err)
	}
	live := mustDispatch(t, q, time.Minute)
	if live == nil || live.jobID != "j" {
		t.Fatalf("after recovery dispatched %+v, want j again, ahead of j2", live)
	}
	if ok, _ := q.ack(ctx, stale, time.Time{}); ok {
		t.Fatal("the stale run's end took the live run's lease")
	}
	if j := mustDispatch(t, q, time.Minute); j != nil {
		t.Fatalf("dispatched %s while the live run holds the key's only place", j.jobID)
	}
	if ok, _ := q.ack(ctx, live, time.Time{}); !ok {
		t.Fatal("the live run's end was refused")
	}
	if j := mustDispatch(t, q, time.Minute); j == nil || j.jobID != "j2" {
		t.Fatalf("dispatched %+v, want j2", j)
	}
}

func TestFairRetryWaitsAsADelayedEntry(t *testing.T) {
	q := newTestFairQueue(t, 0)
	ctx := context.Background()
	mustEnqueue(t, q, "j", "k")
	j := mustDispatch(t, q, time.Minute)
	if ok, _ := q.ack(ctx, j, time.Now().Add(time.Hour)); !ok {
		t.Fatal("ack lost")
	}
	q.maintain(ctx)
	if again := mustDispatch(t, q, time.Minute); again != nil {
		t.Fatal("a retry ran before it was due")
	}
	if s, _ := q.sizes(ctx); s != (FairSizes{Retrying: 1}) {
		t.Fatalf("sizes %+v, want one retrying", s)
	}
	// Make it due now.
	q.rdb.ZAdd(ctx, q.key("delayed"), redis.Z{Score: 0, Member: "k\nj|1"})
	if moved, _, _ := q.maintain(ctx); moved != 1 {
		t.Fatalf("maintain moved %d retries, want 1", moved)
	}
	again := mustDispatch(t, q, time.Minute)
	if again == nil || again.jobID != "j" || again.retried != 1 {
		t.Fatalf("dispatched %+v, want j on its first retry", again)
	}
}

func TestFairReleaseGivesARunningJobBackFirst(t *testing.T) {
	q := newTestFairQueue(t, 0)
	ctx := context.Background()
	mustEnqueue(t, q, "j", "k")
	mustEnqueue(t, q, "j2", "k")
	j := mustDispatch(t, q, time.Minute)
	if ok, err := q.release(ctx, j); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if s, _ := q.sizes(ctx); s.Running != 0 || s.Ready != 2 {
		t.Fatalf("sizes %+v after the release, want two ready", s)
	}
	again := mustDispatch(t, q, time.Minute)
	if again == nil || again.jobID != "j" {
		t.Fatalf("after release dispatched %+v, want j first", again)
	}
	if s, _ := q.sizes(ctx); s.Running != 1 || s.Ready != 1 {
		t.Fatalf("sizes %+v, want one running and one ready", s)
	}
	// The runner never ends a run it gave back; were it to, the run's end
	// must not take the new run's lease.
	if ok, _ := q.ack(ctx, j, time.Time{}); ok {
		t.Fatal("the released run's end still held the lease")
	}
	if s, _ := q.sizes(ctx); s.Running != 1 {
		t.Fatalf("sizes %+v after the released run's end, want the new run's lease kept", s)
	}
}

// newFairHarness is a harness whose worker and queue use fair dispatch.
func newFairHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.cfg.Dispatch = DispatchFair
	client := asynq.NewClientFromRedisClient(h.redis.Client)
	h.queue = NewQueue(client, h.redis.Queue(), WithWakeUps(h.redis.Client), WithFairDispatch(h.redis.Client, 0))
	return h
}

func TestFairDispatchRunsEveryJobOnceAndLeavesNothing(t *testing.T) {
	h := newFairHarness(t)
	// One call fails retryably: that job is retried as a delayed entry.
	h.comp.setFailures(&connector.Error{Code: connector.EUPSTREAM, Message: "upstream 503", UpstreamStatus: 503, Retryable: true})
	w, _ := h.start()
	var jobs []*connector.Job
	for i := range 12 {
		job := h.submitURLJobOf(fmt.Sprintf("owner-%d", i%3))
		jobs = append(jobs, job)
	}
	for _, j := range jobs {
		got := h.waitJob(j.ID, "completed", finished)
		if got.Status != connector.StatusCompleted {
			t.Fatalf("job %s: %s %+v", j.ID, got.Status, got.Error)
		}
	}
	if calls := h.comp.Calls(); calls != len(jobs)+1 {
		t.Fatalf("%d upstream calls for %d jobs and one retry", calls, len(jobs))
	}
	ctx := context.Background()
	waitFor(t, "the dispatcher to hold nothing", func() bool {
		s, err := w.fair.sizes(ctx)
		known, _ := h.redis.Client.HLen(ctx, w.fair.key("known")).Result()
		return err == nil && s == FairSizes{} && known == 0
	})
	retries, err := asynq.NewInspectorFromRedisClient(h.redis.Client).ListRetryTasks(h.redis.Queue())
	if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		t.Fatal(err)
	}
	if len(retries) != 0 {
		t.Fatalf("%d compress tasks in asynq's retry set", len(retries))
	}
}

// submitURLJobOf is submitURLJob for owner, queued under it.
func (h *harness) submitURLJobOf(owner string) *connector.Job {
	h.t.Helper()
	saved := h.owner
	h.owner = owner
	defer func() { h.owner = saved }()
	url := "https://images.test/" + uuid.NewString() + ".png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(h.t, "photo.png")), MIMEType: "image/png", Filename: "photo.png"})
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "")
	if err := h.queue.EnqueueCompress(context.Background(), job.ID, owner); err != nil {
		h.t.Fatal(err)
	}
	return job
}
