package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
)

// finishedJob stores a completed job with a callback; from names the job
// it was deduplicated from ("" for a charged one).
func (h *harness) finishedJob(callbackURL, from string) *connector.Job {
	h.t.Helper()
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: "https://images.test/photo.png"}, callbackURL)
	job, err := h.store.Jobs.Update(context.Background(), job.ID, func(j *connector.Job) error {
		now := time.Now().UTC()
		j.Status, j.FinishedAt, j.DeduplicatedFrom = connector.StatusCompleted, &now, from
		j.Result = &connector.JobResult{OriginalSize: 10, CompressedSize: 7, MIMEType: "image/png"}
		j.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return job
}

// Deliveries of free jobs (deduplicated repeats) spend their key's
// outbound budget: beyond it one waits its turn as a put-off task that
// holds the turn it reserved, never dropped; a charged job's deliveries
// are not counted.
func TestFreeJobsDeliveriesBeyondTheKeysBudgetWaitAndAreNotDropped(t *testing.T) {
	h := newHarness(t)
	h.cfg.FreeDeliveriesPerMinute = 3 // a burst of 3, then one every 20 s
	rec := &recorder{}
	h.cfg.Observer = rec
	w, _ := h.start()
	ctx := context.Background()
	cb := newReceiver(t)
	for range 3 {
		charged := h.finishedJob(cb.URL+"/charged", "")
		if err := h.queue.EnqueueDelivery(ctx, connector.Delivery{ID: connector.CallbackDeliveryID(charged.ID), JobID: charged.ID, Event: connector.EventJobCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	var free []*connector.Job
	for range 4 {
		job := h.finishedJob(cb.URL+"/free", "source-job")
		free = append(free, job)
		if err := h.queue.EnqueueDelivery(ctx, connector.Delivery{ID: connector.CallbackDeliveryID(job.ID), JobID: job.ID, Event: connector.EventJobCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "3 charged and 3 free callbacks delivered, one free put off", func() bool { return cb.count() == 6 && rec.has("delivery deferred") })

	// The fourth free delivery waits in the queue, holding its turn.
	inspector := asynq.NewInspectorFromRedisClient(h.redis.Client)
	scheduled, err := inspector.ListScheduledTasks(DeliveryQueue(h.cfg.Queue))
	if err != nil || len(scheduled) != 1 {
		t.Fatalf("expected one put-off delivery scheduled, got %d (%v)", len(scheduled), err)
	}
	var d connector.Delivery
	if err := json.Unmarshal(scheduled[0].Payload, &d); err != nil || !d.BudgetTaken || d.Retried != 0 {
		t.Fatalf("put-off delivery: expected it to hold its budget turn with no attempt spent, got %+v (%v)", d, err)
	}
	if at := scheduled[0].NextProcessAt; at.Before(time.Now().Add(10*time.Second)) || at.After(time.Now().Add(25*time.Second)) {
		t.Errorf("put-off delivery: expected it due at its turn, about 20 s on, got %v", time.Until(at))
	}
	// Its turn come (run now, as asynq will), it is sent without spending
	// the budget again.
	if err := w.Handler().ProcessTask(ctx, deliveryTask(t, d)); err != nil {
		t.Fatalf("the put-off delivery at its turn: %v", err)
	}
	if cb.count() != 7 {
		t.Fatalf("expected every free job's callback delivered in the end, got %d requests", cb.count())
	}
	for _, job := range free {
		got, _ := h.store.Jobs.Get(ctx, job.ID)
		if got.Callback == nil || got.Callback.Status != connector.DeliveryDelivered {
			t.Errorf("job %s: expected its callback delivered, got %+v", job.ID, got.Callback)
		}
	}
}
