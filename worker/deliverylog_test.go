package worker

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/connector"
)

// attempts reads the job's delivery log once it holds n attempts.
func (h *harness) attempts(jobID string, n int) []*connector.DeliveryAttempt {
	h.t.Helper()
	var got []*connector.DeliveryAttempt
	waitFor(h.t, strconv.Itoa(n)+" recorded delivery attempts", func() bool {
		var err error
		got, err = h.store.Hooks.DeliveryAttempts(context.Background(), jobID)
		if err != nil {
			h.t.Fatalf("DeliveryAttempts: %v", err)
		}
		return len(got) >= n
	})
	return got
}

func TestEveryCallbackAttemptIsRecordedWithoutTheQueryString(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, 503)
	job := h.submitURLJob(cb.URL + "/resume?signature=secret-sig")
	h.waitJob(job.ID, "callback delivered", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})

	got := h.attempts(job.ID, 2)
	if len(got) != 2 {
		t.Fatalf("expected 2 attempts (503, then 200), got %d", len(got))
	}
	first, second := got[0], got[1]
	if first.DeliveryID != connector.CallbackDeliveryID(job.ID) || first.HookID != "" || first.Event != connector.EventJobCompleted {
		t.Errorf("first attempt: expected the callback's delivery id and job.completed, got %+v", first)
	}
	if first.Target != cb.URL+"/resume" || second.Target != cb.URL+"/resume" {
		t.Errorf("expected the target without its query string (%s/resume), got %q and %q", cb.URL, first.Target, second.Target)
	}
	if first.StatusCode != 503 || first.Outcome != connector.OutcomeRetrying || first.Error == "" || first.NextRetryAt == nil || !first.NextRetryAt.After(first.At) {
		t.Errorf("first attempt: expected 503, retrying, an error and a next retry after it, got %+v", first)
	}
	if second.StatusCode != 200 || second.Outcome != connector.OutcomeDelivered || second.Error != "" || second.NextRetryAt != nil || second.At.Before(first.At) {
		t.Errorf("second attempt: expected 200, delivered, no error and no next retry, got %+v", second)
	}
	if first.DurationMS < 0 || first.At.IsZero() {
		t.Errorf("expected a time and a duration, got at %v, %d ms", first.At, first.DurationMS)
	}
}

func TestLastFailedAttemptIsRecordedAsFailedWithoutNextRetry(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, 500, 500, 500)
	job := h.submitURLJob(cb.URL)
	got := h.attempts(job.ID, 3)
	last := got[len(got)-1]
	if len(got) != 3 || last.Outcome != connector.OutcomeFailed || last.NextRetryAt != nil || last.StatusCode != 500 {
		t.Errorf("expected 3 attempts, the last failed for good without a next retry, got %d, last %+v", len(got), last)
	}
}

func TestHookAttemptsAreRecordedAndADeletedHookIsLoggedAsDropped(t *testing.T) {
	h := newHarness(t)
	// asynq keeps retry times in whole seconds, so a 1.5 s delay is 0.5 to
	// 1.5 s: time enough to delete the hook after the first attempt.
	h.cfg.DeliverySchedule = []time.Duration{0, 1500 * time.Millisecond, 1500 * time.Millisecond}
	h.start()
	rcv := newReceiver(t, 500, 500, 500)
	h.newHook("hook_log", connector.EventJobFinished, rcv.URL+"/in")
	job := h.submitURLJob("")

	first := h.attempts(job.ID, 1)[0]
	if first.HookID != "hook_log" || first.DeliveryID != connector.HookDeliveryID(job.ID, "hook_log") || first.Target != rcv.URL+"/in" || first.StatusCode != 500 {
		t.Errorf("expected a hook attempt with its hook id, delivery id and target, got %+v", first)
	}
	if err := h.store.Hooks.Delete(context.Background(), h.owner, "hook_log"); err != nil {
		t.Fatal(err)
	}
	got := h.attempts(job.ID, 2)
	if got[1].Outcome != connector.OutcomeDropped || got[1].Error != "not sent: the hook was deleted" || got[1].StatusCode != 0 {
		t.Errorf("expected the next attempt dropped because the hook was deleted, got %+v", got[1])
	}
	if n := rcv.count(); n != 1 {
		t.Errorf("expected nothing sent after the deletion, got %d requests", n)
	}
}

func TestRedeliveryPostsTheSameMessageWithAFreshTimestampAndSignature(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t)
	job := h.submitURLJob(cb.URL + "/cb")
	h.waitJob(job.ID, "callback delivered", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})
	time.Sleep(1100 * time.Millisecond) // webhook-timestamp counts seconds

	d := connector.Delivery{ID: connector.CallbackDeliveryID(job.ID), JobID: job.ID, Event: connector.EventJobCompleted, Redeliver: true}
	if err := h.queue.EnqueueDelivery(context.Background(), d); err != nil {
		t.Fatalf("EnqueueDelivery: %v", err)
	}
	waitFor(t, "the redelivery", func() bool { return cb.count() == 2 })
	reqs := cb.requests()
	if reqs[1].header.Get("webhook-id") != reqs[0].header.Get("webhook-id") || string(reqs[1].body) != string(reqs[0].body) {
		t.Errorf("expected the same webhook-id and body, got %q/%q", reqs[0].header.Get("webhook-id"), reqs[1].header.Get("webhook-id"))
	}
	if reqs[1].header.Get("webhook-timestamp") == reqs[0].header.Get("webhook-timestamp") ||
		reqs[1].header.Get("webhook-signature") == reqs[0].header.Get("webhook-signature") {
		t.Errorf("expected a fresh timestamp and signature, got the first ones again")
	}
	wh, _ := standardwebhooks.NewWebhook(h.keyring.WebhookSecret("callback", h.owner))
	if err := wh.Verify(reqs[1].body, reqs[1].header); err != nil {
		t.Errorf("expected the redelivery to verify, got %v", err)
	}
	got := h.attempts(job.ID, 2)
	if !got[1].Redelivery || got[1].Outcome != connector.OutcomeDelivered || got[0].Redelivery {
		t.Errorf("expected the second attempt marked as a delivered redelivery, got %+v", got[1])
	}
}

func TestFailedRedeliveryIsNotRetriedAndAnotherCanFollow(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, 200, 500, 200)
	job := h.submitURLJob(cb.URL)
	h.waitJob(job.ID, "callback delivered", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})
	d := connector.Delivery{ID: connector.CallbackDeliveryID(job.ID), JobID: job.ID, Event: connector.EventJobCompleted, Redeliver: true}
	if err := h.queue.EnqueueDelivery(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	failed := h.attempts(job.ID, 2)[1]
	if failed.Outcome != connector.OutcomeFailed || failed.StatusCode != 500 || failed.NextRetryAt != nil {
		t.Errorf("expected the redelivery failed for good (no retry), got %+v", failed)
	}
	time.Sleep(300 * time.Millisecond) // longer than the test schedule's retries
	if n := cb.count(); n != 2 {
		t.Fatalf("expected no retry of a redelivery, got %d requests", n)
	}
	if j, _ := h.store.Jobs.Get(context.Background(), job.ID); j.Callback.Status != connector.DeliveryDelivered {
		t.Errorf("expected a failed redelivery to leave the callback delivered, got %+v", j.Callback)
	}
	if err := h.queue.EnqueueDelivery(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if again := h.attempts(job.ID, 3)[2]; again.Outcome != connector.OutcomeDelivered || cb.count() != 3 {
		t.Errorf("expected a second redelivery to go through, got %+v after %d requests", again, cb.count())
	}
}

func TestRedeliveryOfAFailedCallbackMarksItDelivered(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, http.StatusGone)
	job := h.submitURLJob(cb.URL)
	h.waitJob(job.ID, "callback failed", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryFailed
	})
	d := connector.Delivery{ID: connector.CallbackDeliveryID(job.ID), JobID: job.ID, Event: connector.EventJobCompleted, Redeliver: true}
	if err := h.queue.EnqueueDelivery(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	got := h.waitJob(job.ID, "callback delivered by the redelivery", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})
	if got.Callback.Attempts != 1 || got.Callback.DeliveredAt == nil {
		t.Errorf("expected the scheduled attempt count kept (1) and delivered_at set, got %+v", got.Callback)
	}
	if log := h.attempts(job.ID, 2); log[0].Outcome != connector.OutcomeGone || log[1].Outcome != connector.OutcomeDelivered {
		t.Errorf("expected gone then delivered, got %s then %s", log[0].Outcome, log[1].Outcome)
	}
}
