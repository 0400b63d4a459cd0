package worker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// A job recorded whose task never reached the queue (serve killed between
// the two writes) is queued by the sweeper and completes, charged once;
// notes of jobs that were queued, or are gone, are forgotten.
func TestJobWithoutATaskIsQueuedBySweeper(t *testing.T) {
	h := newHarness(t)
	h.tweak = func(w *Worker) { w.sweepEvery, w.unqueuedAfter = 50*time.Millisecond, 200*time.Millisecond }
	url := "https://images.test/photo.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png"})
	orphan := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "") // never enqueued
	queued := h.submitURLJob("")
	deleted := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "")
	if err := h.store.DeleteJob(context.Background(), deleted.ID); err != nil {
		t.Fatal(err)
	}
	h.start()

	for _, id := range []string{orphan.ID, queued.ID} {
		if got := h.waitJob(id, "completed", finished); got.Status != connector.StatusCompleted {
			t.Fatalf("job %s: %s %+v, want completed", id, got.Status, got.Error)
		}
	}
	if calls := h.comp.Calls(); calls != 2 {
		t.Errorf("upstream calls: %d, want 2 (one per job)", calls)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := h.store.UnqueuedJobs(context.Background(), time.Now(), 10)
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
}

// A job made again under the id of a task that already ran and finished
// (it found no job: a request whose enqueue reported an error had deleted
// it) meets that retained task, and its enqueue is a no-op. The sweeper
// deletes the finished task and queues the job again.
func TestJobBehindAFinishedTaskIsQueuedAgain(t *testing.T) {
	h := newHarness(t)
	h.tweak = func(w *Worker) { w.sweepEvery, w.unqueuedAfter = 50*time.Millisecond, 200*time.Millisecond }
	url := "https://images.test/photo.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png"})
	ctx := context.Background()
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: url}, "")
	if err := h.store.DeleteJob(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	h.enqueue(job.ID)
	h.start()
	q := "asynq:{" + h.redis.Queue() + "}:t:" + job.ID
	for deadline := time.Now().Add(10 * time.Second); h.redis.Client.HGet(ctx, q, "state").Val() != "completed"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task for the deleted job never finished")
		}
	}
	// The retry makes the job again under its id; its enqueue is a no-op.
	job.Status, job.CreatedAt, job.UpdatedAt = connector.StatusQueued, time.Time{}, time.Time{}
	if err := h.store.CreateJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	h.enqueue(job.ID)
	if got := h.waitJob(job.ID, "completed", finished); got.Status != connector.StatusCompleted || h.comp.Calls() != 1 {
		t.Fatalf("job %s after %d calls, want completed after 1", got.Status, h.comp.Calls())
	}
}
