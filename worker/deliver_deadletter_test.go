package worker

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
)

// deliveryTasks lists the deliveries queue's tasks in state (archived or
// completed).
func (h *harness) deliveryTasks(state string) []*asynq.TaskInfo {
	h.t.Helper()
	in := asynq.NewInspectorFromRedisClient(h.redis.Client)
	q := DeliveryQueue(h.redis.Queue())
	var tasks []*asynq.TaskInfo
	var err error
	switch state {
	case "archived":
		tasks, err = in.ListArchivedTasks(q)
	case "completed":
		tasks, err = in.ListCompletedTasks(q)
	default:
		h.t.Fatalf("deliveryTasks: unknown state %q", state)
	}
	if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		h.t.Fatalf("list %s tasks: %v", state, err)
	}
	return tasks
}

// Deliveries that fail for good for the receiver's reasons (a callback URL
// answering 500 to every attempt, a hook answering 410, a hook answering
// 500 to every attempt) end with the callback's state and the hooks'
// endpoints saying so, and without a task in asynq's archive: dead letters
// (and their alert) are the system's faults, not a receiver's.
func TestDeliveriesFailedByTheReceiverLeaveTheArchiveEmpty(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, 500, 500, 500, 500, 500)
	gone := newReceiver(t, http.StatusGone)
	failing := newReceiver(t, 500, 500, 500, 500, 500)
	h.newHook("hook_gone", connector.EventJobFinished, gone.URL)
	h.newHook("hook_failing", connector.EventJobFinished, failing.URL)
	job := h.submitURLJob(cb.URL + "/cb")

	got := h.waitJob(job.ID, "callback failed", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryFailed
	})
	if got.Callback.Attempts != 3 || got.Callback.LastStatus != 500 {
		t.Errorf("callback state: expected failed after 3 attempts with last_status 500, got %+v", got.Callback)
	}
	waitFor(t, "the 410 hook disabled", func() bool {
		hk, err := h.store.Hooks.Get(context.Background(), "hook_gone")
		return err == nil && hk.Disabled
	})
	// Every delivery task ended (callback, the 410 hook, the failing hook's
	// last attempt): completed, kept for the retention, none archived.
	waitFor(t, "three delivery tasks ended", func() bool {
		return len(h.deliveryTasks("completed"))+len(h.deliveryTasks("archived")) >= 3
	})
	if n := failing.count(); n != 3 {
		t.Errorf("failing hook: expected 3 attempts (the schedule's length), got %d", n)
	}
	if archived := h.deliveryTasks("archived"); len(archived) != 0 {
		t.Errorf("%d delivery tasks archived after the receivers' failures, want none: first %s %s", len(archived), archived[0].ID, archived[0].LastErr)
	}
	if n := len(h.deliveryTasks("completed")); n != 3 {
		t.Errorf("expected the 3 delivery tasks completed, got %d", n)
	}
}

// A delivery that cannot be made for the system's reasons (the store does
// not answer on any attempt) is still a dead letter: asynq archives it
// after the last retry, for the operator to see and re-run.
func TestADeliveryFailingForTheSystemIsArchived(t *testing.T) {
	h := newHarness(t)
	out := &outage{store: h.store}
	h.cfg.Jobs = out.jobs()
	h.start()
	cb := newReceiver(t)
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: "https://images.test/photo.png"}, cb.URL+"/cb")
	out.downFor(time.Minute)
	d := connector.Delivery{ID: connector.CallbackDeliveryID(job.ID), JobID: job.ID, Event: connector.EventJobCompleted}
	if err := h.queue.EnqueueDelivery(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery archived", func() bool { return len(h.deliveryTasks("archived")) == 1 })
	if n := cb.count(); n != 0 {
		t.Errorf("expected nothing sent while the job could not be read, got %d requests", n)
	}
	if out.refused.Load() < 3 {
		t.Errorf("expected 3 attempts refused by the store, got %d", out.refused.Load())
	}
}
