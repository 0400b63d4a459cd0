package worker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/app"
	"github.com/imgflow/imgflow/internal/asynqext"
)

// taskState is the state of task id of q, as the sweeper reads it.
func taskState(t *testing.T, q asynqext.Queue, rdb redis.Cmdable, id string) asynqext.TaskState {
	t.Helper()
	states, err := q.TaskStates(context.Background(), rdb, []string{id})
	if err != nil {
		t.Fatalf("reading the state of task %s: %v", id, err)
	}
	return states[0]
}

// failingQueue is a queue whose Redis is down.
type failingQueue struct{}

func (failingQueue) EnqueueCompress(context.Context, string, string) error {
	return &connector.Error{Code: connector.EUNAVAILABLE, Message: "queue down"}
}
func (failingQueue) EnqueueDelivery(context.Context, connector.Delivery) error {
	return &connector.Error{Code: connector.EUNAVAILABLE, Message: "queue down"}
}

// A single job recorded whose task never reached the queue (serve killed
// between the two writes, or stalled there past the sweeper) is queued by
// the sweeper and completes: the sweeper never removes a job its request
// may have answered. So are the items of a batch that was made but whose
// enqueues failed, each charged once. Notes of jobs that were queued, or
// are gone, are forgotten.
func TestSweeperQueuesJobsWhoseTaskNeverReachedTheQueue(t *testing.T) {
	h := newHarness(t)
	h.tweak = func(w *Worker) {
		w.sweepEvery, w.unqueuedAfter, w.makingAfter = 50*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	}
	ctx := context.Background()
	url := "https://images.test/photo.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png"})
	orphan := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "") // never enqueued
	queued := h.submitURLJob("")
	deleted := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "")
	if err := h.store.Jobs.Delete(ctx, deleted.ID); err != nil {
		t.Fatal(err)
	}
	maker := app.New(app.Config{Jobs: h.store.Jobs, Batches: h.store.Batches, Queue: failingQueue{}, Keyring: h.keyring})
	defer maker.Close()
	b, _, err := maker.CreateBatch(ctx, &app.BatchRequest{Owner: h.owner, Key: h.apiKey,
		Items: []app.Input{{Kind: connector.InputURL, URL: url}, {Kind: connector.InputURL, URL: url, Dedupe: new(bool)}}})
	if err != nil {
		t.Fatalf("the batch is made though its queue is down (it is decided made): %v", err)
	}
	h.start()

	for _, id := range append([]string{queued.ID, orphan.ID}, b.JobIDs...) {
		if got := h.waitJob(id, "completed", finished); got.Status != connector.StatusCompleted {
			t.Fatalf("job %s: %s %+v, want completed", id, got.Status, got.Error)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := h.store.Jobs.Unqueued(ctx, time.Now(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notes left after the sweeps: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The orphan and the first batch item may complete from the queued
	// job's result (same image, dedupe on); the second item turned dedupe
	// off.
	if calls := h.comp.Calls(); calls < 2 || calls > 4 {
		t.Errorf("upstream calls: %d, want one per job at most, two at least (2 to 4)", calls)
	}
}

// A job made again under the id of a task that already ran and finished
// (it found no job: a request whose enqueue reported an error had deleted
// it) meets that retained task, and its enqueue is a no-op. The sweeper
// deletes the finished task and queues the job again.
func TestJobBehindAFinishedTaskIsQueuedAgain(t *testing.T) {
	asynqOnly(t, "TestFairEnqueueOfAKnownJobIsANoOp (no task is retained)")
	h := newHarness(t)
	h.tweak = func(w *Worker) { w.sweepEvery, w.unqueuedAfter = 50*time.Millisecond, 200*time.Millisecond }
	url := "https://images.test/photo.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png"})
	ctx := context.Background()
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "")
	if err := h.store.Jobs.Delete(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	h.enqueue(job.ID)
	h.start()
	q := asynqext.QueueOf(h.redis.Queue())
	for deadline := time.Now().Add(10 * time.Second); taskState(t, q, h.redis.Client, job.ID) != asynqext.TaskCompleted; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task for the deleted job never finished")
		}
	}
	// The retry makes the job again under its id; its enqueue is a no-op.
	job.Status, job.CreatedAt, job.UpdatedAt = connector.StatusQueued, time.Time{}, time.Time{}
	if err := h.store.Jobs.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	h.enqueue(job.ID)
	if got := h.waitJob(job.ID, "completed", finished); got.Status != connector.StatusCompleted || h.comp.Calls() != 1 {
		t.Fatalf("job %s after %d calls, want completed after 1", got.Status, h.comp.Calls())
	}
}

// A batch item whose end was never counted (the count met a Redis outage
// and its task was lost with it) is counted by the sweeper: the batch
// finishes and its batch.finished event is queued, once.
func TestSweeperCountsABatchItemsMissedEnd(t *testing.T) {
	h := newHarness(t)
	h.tweak = func(w *Worker) {
		w.sweepEvery, w.unqueuedAfter, w.makingAfter, w.runningAfter = 50*time.Millisecond, time.Hour, time.Hour, 100*time.Millisecond
	}
	h.cfg.Batches = h.store.Batches
	ctx := context.Background()
	maker := app.New(app.Config{Jobs: h.store.Jobs, Batches: h.store.Batches, Queue: failingQueue{}, Keyring: h.keyring})
	defer maker.Close()
	b, _, err := maker.CreateBatch(ctx, &app.BatchRequest{Owner: h.owner, Key: h.apiKey, CallbackURL: "https://hooks.example/batch",
		Items: []app.Input{{Kind: connector.InputURL, URL: "https://images.test/a.png"}, {Kind: connector.InputURL, URL: "https://images.test/b.png"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range b.JobIDs {
		if _, err := h.store.Jobs.Update(ctx, id, func(j *connector.Job) error {
			j.Status = connector.StatusFailed
			j.Error = &connector.JobError{Code: "fetch_failed", Message: "test"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // the other's count is lost
			if _, err := h.store.Batches.ItemEnded(ctx, b.ID, id, false, 0, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.start()
	h.waitBatchFinished(b)
}
