package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/connector"
)

func TestCallbackRetriedUntilDeliveredWithOneStableSignedID(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, 500, 503)
	job := h.submitURLJob(cb.URL + "/resume?signature=abc")

	got := h.waitJob(job.ID, "callback delivered", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})
	reqs := cb.requests()
	if len(reqs) != 3 {
		t.Fatalf("callback requests: expected 2 failures then 1 success = 3, got %d", len(reqs))
	}
	if got.Callback.Attempts != 3 || got.Callback.LastStatus != 200 || got.Callback.DeliveredAt == nil {
		t.Errorf("callback state: expected delivered, 3 attempts, last_status 200, delivered_at set, got %+v", got.Callback)
	}
	wh, err := standardwebhooks.NewWebhook(h.keyring.WebhookSecret("callback", h.owner))
	if err != nil {
		t.Fatal(err)
	}
	id := reqs[0].header.Get("webhook-id")
	if id == "" {
		t.Fatal("webhook-id: expected a value, got none")
	}
	for i, r := range reqs {
		if r.header.Get("webhook-id") != id {
			t.Errorf("attempt %d: expected webhook-id %q, got %q", i+1, id, r.header.Get("webhook-id"))
		}
		if err := wh.Verify(r.body, r.header); err != nil {
			t.Errorf("attempt %d: expected a signature that verifies with the owner's callback secret, got %v", i+1, err)
		}
		if r.query != "signature=abc" {
			t.Errorf("attempt %d: expected the callback URL's query kept, got %q", i+1, r.query)
		}
		if string(r.body) != string(reqs[0].body) {
			t.Errorf("attempt %d: expected the same body on every attempt", i+1)
		}
	}
	var ev struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(reqs[2].body, &ev); err != nil {
		t.Fatalf("body: expected an event, got %q: %v", reqs[2].body, err)
	}
	var data connector.Job
	json.Unmarshal(ev.Data, &data)
	if ev.Type != connector.EventJobCompleted || data.ID != job.ID || data.Status != connector.StatusCompleted || ev.Timestamp.IsZero() {
		t.Errorf("event: expected job.completed for %s with a timestamp, got %s for %s (%s)", job.ID, ev.Type, data.ID, data.Status)
	}
	if data.Result == nil || !strings.HasPrefix(data.Result.FileURL, "https://imgflow.test/v1/jobs/"+job.ID+"/file?token=") {
		t.Errorf("event: expected result.file_url under the public URL, got %+v", data.Result)
	} else if token := data.Result.FileURL[strings.Index(data.Result.FileURL, "token=")+6:]; !h.keyring.VerifyFileToken(job.ID, token, time.Now()) {
		t.Errorf("event: expected a file_url token valid now, got %q", token)
	}
	if strings.Contains(string(ev.Data), "compressed_data") || strings.Contains(string(ev.Data), "signature=abc") {
		t.Errorf("event: expected neither the bytes nor the callback URL, got %s", ev.Data)
	}
	if string(data.Metadata) != `{"flow":"test"}` {
		t.Errorf("event: expected metadata echoed, got %s", data.Metadata)
	}
}

func TestCallbackRedirectCountsAsFailure(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, http.StatusFound)
	job := h.submitURLJob(cb.URL + "/cb")

	got := h.waitJob(job.ID, "callback delivered", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})
	reqs := cb.requests()
	if len(reqs) != 2 || got.Callback.Attempts != 2 {
		t.Fatalf("expected the 302 to count as a failed attempt and a second attempt to deliver, got %d requests, %d attempts", len(reqs), got.Callback.Attempts)
	}
	for _, r := range reqs {
		if r.query != "" || r.header.Get("webhook-id") == "" {
			t.Errorf("expected only POSTs to the callback URL (redirect not followed), got %+v", r)
		}
	}
}

func TestCallbackFailsAfterTheLastAttempt(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t, 500, 500, 500, 500, 500)
	job := h.submitURLJob(cb.URL)

	got := h.waitJob(job.ID, "callback failed", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryFailed
	})
	if got.Callback.Attempts != 3 || got.Callback.LastStatus != 500 || !strings.Contains(got.Callback.LastError, "500") {
		t.Errorf("callback state: expected 3 attempts (the schedule's length), last_status 500, last_error naming it, got %+v", got.Callback)
	}
	time.Sleep(300 * time.Millisecond) // past the schedule: nothing more may come
	if n := cb.count(); n != 3 {
		t.Errorf("callback requests: expected 3, got %d", n)
	}
}

// newHook subscribes the test key to event at target.
func (h *harness) newHook(id, event, target string) *connector.Hook {
	h.t.Helper()
	hook := &connector.Hook{ID: id, TargetURL: target, Event: event, Owner: h.owner}
	if err := h.store.Hooks.Create(context.Background(), hook); err != nil {
		h.t.Fatalf("Create: %v", err)
	}
	return hook
}

func TestHooksGetTheEventsTheySubscribedTo(t *testing.T) {
	h := newHarness(t)
	h.start()
	all := newReceiver(t)
	completed := newReceiver(t)
	failed := newReceiver(t)
	h.newHook("hook_all", connector.EventJobFinished, all.URL)
	h.newHook("hook_ok", connector.EventJobCompleted, completed.URL)
	h.newHook("hook_ko", connector.EventJobFailed, failed.URL)
	job := h.submitURLJob("")

	waitFor(t, "job.finished and job.completed hooks called", func() bool { return all.count() == 1 && completed.count() == 1 })
	r := completed.requests()[0]
	wh, _ := standardwebhooks.NewWebhook(h.keyring.WebhookSecret("hook", "hook_ok"))
	if err := wh.Verify(r.body, r.header); err != nil {
		t.Errorf("expected a signature that verifies with the hook's secret, got %v", err)
	}
	if id := r.header.Get("webhook-id"); !strings.Contains(id, job.ID) || id == all.requests()[0].header.Get("webhook-id") {
		t.Errorf("expected a webhook-id per job and hook, got %q", id)
	}
	time.Sleep(200 * time.Millisecond)
	if n := failed.count(); n != 0 {
		t.Errorf("job.failed hook: expected nothing for a completed job, got %d requests", n)
	}
}

func TestHookAnswering410IsDisabled(t *testing.T) {
	h := newHarness(t)
	h.start()
	gone := newReceiver(t, http.StatusGone, 200, 200)
	h.newHook("hook_gone", connector.EventJobFinished, gone.URL)
	job := h.submitURLJob("")
	h.waitJob(job.ID, "finished", finished)

	waitFor(t, "the hook disabled", func() bool {
		hk, err := h.store.Hooks.Get(context.Background(), "hook_gone")
		return err == nil && hk.Disabled
	})
	time.Sleep(300 * time.Millisecond) // past the schedule
	if n := gone.count(); n != 1 {
		t.Errorf("expected 410 to stop retries after 1 request, got %d", n)
	}
	second := h.submitURLJob("")
	h.waitJob(second.ID, "finished", finished)
	time.Sleep(200 * time.Millisecond)
	if n := gone.count(); n != 1 {
		t.Errorf("expected a disabled hook to get no later job, got %d requests in all", n)
	}
}

func TestDeletedHookGetsNothingMore(t *testing.T) {
	h := newHarness(t)
	// asynq keeps retry times in whole seconds, so a 1.5 s delay is 0.5 to
	// 1.5 s: time enough to delete the hook after the first attempt.
	h.cfg.DeliverySchedule = []time.Duration{0, 1500 * time.Millisecond, 1500 * time.Millisecond}
	h.start()
	rcv := newReceiver(t, 500, 500, 500)
	h.newHook("hook_del", connector.EventJobFinished, rcv.URL)
	h.submitURLJob("")

	waitFor(t, "the first attempt", func() bool { return rcv.count() >= 1 })
	if err := h.store.Hooks.Delete(context.Background(), h.owner, "hook_del"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // past the rest of the schedule
	if n := rcv.count(); n != 1 {
		t.Errorf("expected no attempt after the hook was deleted, got %d requests", n)
	}
}

func TestDeliveryPendingWhenAWorkerStopsIsMadeByTheNext(t *testing.T) {
	h := newHarness(t)
	h.cfg.DeliverySchedule = []time.Duration{0, 1500 * time.Millisecond}
	_, stopA := h.start()
	cb := newReceiver(t, 500)
	job := h.submitURLJob(cb.URL)

	waitFor(t, "the first (failing) attempt", func() bool { return cb.count() == 1 })
	stopA() // the retry waits in Redis, owned by no one
	time.Sleep(200 * time.Millisecond)
	if n := cb.count(); n != 1 {
		t.Fatalf("expected worker A to make exactly 1 attempt, got %d", n)
	}
	h.start() // worker B

	got := h.waitJob(job.ID, "callback delivered by worker B", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})
	reqs := cb.requests()
	if len(reqs) != 2 || got.Callback.Attempts != 2 || reqs[0].header.Get("webhook-id") != reqs[1].header.Get("webhook-id") {
		t.Errorf("expected 2 attempts with one webhook-id, got %d requests, %d attempts", len(reqs), got.Callback.Attempts)
	}
}

func TestDeliveryOfAnExpiredJobIsDropped(t *testing.T) {
	h := newHarness(t)
	w, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	task := deliveryTask(t, connector.Delivery{ID: "msg_x_cb", JobID: "0190a0a0-0000-7000-8000-000000000000", Event: connector.EventJobCompleted})
	if err := w.Handler().ProcessTask(context.Background(), task); err != nil {
		t.Errorf("expected nil (nothing to deliver), got %v", err)
	}
}

// TestDeliveredCallbackIsNotPostedAgain: a delivery task run once more (from
// the dashboard, after asynq forgot its id) must not post the event twice.
func TestDeliveredCallbackIsNotPostedAgain(t *testing.T) {
	h := newHarness(t)
	h.start()
	cb := newReceiver(t)
	job := h.submitURLJob(cb.URL + "/cb")
	h.waitJob(job.ID, "callback delivered", func(j *connector.Job) bool {
		return j.Callback != nil && j.Callback.Status == connector.DeliveryDelivered
	})

	w, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	task := deliveryTask(t, connector.Delivery{ID: connector.CallbackDeliveryID(job.ID), JobID: job.ID, Event: connector.EventJobCompleted})
	if err := w.Handler().ProcessTask(context.Background(), task); err != nil {
		t.Fatalf("expected nil, got %v", err)
	}
	if n := cb.count(); n != 1 {
		t.Errorf("expected the callback posted once, got %d posts", n)
	}
}
