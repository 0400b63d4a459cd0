package worker

import (
	"context"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
)

// A batch item whose record is gone (lost in a Redis restart without
// persistence, or expired) once its batch was made is counted failed by
// the sweeper, once: the batch finishes and its batch.finished is queued.
func TestSweeperCountsABatchItemWhoseRecordIsGoneAsFailed(t *testing.T) {
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
	if _, err := h.store.Jobs.Update(ctx, b.JobIDs[0], func(j *connector.Job) error {
		j.Status = connector.StatusCompleted
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Batches.ItemEnded(ctx, b.ID, b.JobIDs[0], true, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := h.redis.Client.Del(ctx, h.redis.Prefix+"job:{"+b.JobIDs[1]+"}").Err(); err != nil { // lost
		t.Fatal(err)
	}
	h.start()
	h.waitBatchFinished(b)
	time.Sleep(300 * time.Millisecond) // sweeps more
	got, err := h.store.Batches.Get(ctx, b.ID)
	if err != nil || got.Counts.Completed != 1 || got.Counts.Failed != 1 {
		t.Fatalf("batch %+v %v, want 1 completed and the lost item failed, once", got, err)
	}
}
