package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// finishedJobWithCallback creates a job of the harness key with a callback
// URL (carrying a signature in its query) and finishes it.
func (h *harness) finishedJobWithCallback() *connector.Job {
	h.t.Helper()
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png",
		"callback_url": "https://flows.example.com/resume/7?signature=s3cret"}, nil)
	expectStatus(h.t, r, http.StatusAccepted)
	h.finish(r.str("id"), []byte("small"))
	job, err := h.store.Jobs.Get(context.Background(), r.str("id"))
	if err != nil {
		h.t.Fatal(err)
	}
	return job
}

func (h *harness) record(job *connector.Job, attempts ...*connector.DeliveryAttempt) {
	h.t.Helper()
	for _, a := range attempts {
		if err := h.store.Hooks.RecordDeliveryAttempt(context.Background(), job, a); err != nil {
			h.t.Fatal(err)
		}
	}
}

func TestDeliveriesListEveryAttemptOfTheCallbackAndHooks(t *testing.T) {
	h := newHarness(t)
	job := h.finishedJobWithCallback()
	cb := connector.CallbackDeliveryID(job.ID)
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	next := at.Add(5 * time.Second)
	h.record(job,
		&connector.DeliveryAttempt{DeliveryID: cb, Event: connector.EventJobCompleted, Target: "https://flows.example.com/resume/7",
			At: at, DurationMS: 40, StatusCode: 502, Response: "bad gateway", Error: "webhook URL answered 502 Bad Gateway",
			Outcome: connector.OutcomeRetrying, NextRetryAt: &next},
		&connector.DeliveryAttempt{DeliveryID: connector.HookDeliveryID(job.ID, "h1"), HookID: "h1", Event: connector.EventJobCompleted,
			Target: "https://hooks.example.com/in", At: at, StatusCode: 200, Outcome: connector.OutcomeDelivered},
		&connector.DeliveryAttempt{DeliveryID: cb, Event: connector.EventJobCompleted, Target: "https://flows.example.com/resume/7",
			At: next, DurationMS: 12, StatusCode: 204, Outcome: connector.OutcomeDelivered},
	)

	r := h.do(http.MethodGet, "/v1/jobs/"+job.ID+"/deliveries", nil, map[string]string{"X-API-Key": h.key})
	expectStatus(t, r, http.StatusOK)
	if r.str("job_id") != job.ID {
		t.Errorf("job_id: expected %s, got %q", job.ID, r.str("job_id"))
	}
	list, _ := r.get("deliveries").([]any)
	if len(list) != 2 {
		t.Fatalf("expected 2 deliveries (callback, hook), got %s", truncate(r.body))
	}
	first := list[0].(map[string]any)
	attempts := first["attempts"].([]any)
	a1 := attempts[0].(map[string]any)
	if first["id"] != cb || first["kind"] != "callback" || first["status"] != "delivered" || len(attempts) != 2 {
		t.Errorf("callback: expected %s, delivered, 2 attempts, got %v", cb, first)
	}
	if a1["attempt"] != 1.0 || a1["status_code"] != 502.0 || a1["response"] != "bad gateway" || a1["duration_ms"] != 40.0 ||
		a1["next_retry_at"] != "2026-11-21T10:00:05Z" || a1["outcome"] != "retrying" || a1["error"] == nil {
		t.Errorf("first attempt: expected attempt 1, 502, its answer, 40 ms, the next retry, got %v", a1)
	}
	second := list[1].(map[string]any)
	if second["kind"] != "hook" || second["hook_id"] != "h1" || second["target"] != "https://hooks.example.com/in" {
		t.Errorf("hook delivery: expected kind hook, hook_id h1 and its target, got %v", second)
	}
	for _, secret := range []string{"s3cret", "signature"} {
		if strings.Contains(string(r.body), secret) {
			t.Errorf("expected the callback URL's query string never shown, found %q in %s", secret, truncate(r.body))
		}
	}
}

func TestACallbackNotYetAttemptedIsListedAsPending(t *testing.T) {
	h := newHarness(t)
	job := h.finishedJobWithCallback()
	r := h.do(http.MethodGet, "/v1/jobs/"+job.ID+"/deliveries", nil, map[string]string{"X-API-Key": h.key})
	expectStatus(t, r, http.StatusOK)
	list, _ := r.get("deliveries").([]any)
	if len(list) != 1 {
		t.Fatalf("expected the callback listed, got %s", truncate(r.body))
	}
	d := list[0].(map[string]any)
	if d["status"] != "pending" || d["target"] != "https://flows.example.com/resume/7" || len(d["attempts"].([]any)) != 0 {
		t.Errorf("expected a pending callback without attempts, got %v", d)
	}
}

func TestDeliveriesBelongToTheJobsKey(t *testing.T) {
	h := newHarness(t)
	job := h.finishedJobWithCallback()
	other, _, _ := h.ledger.CreateAccount(context.Background(), 0)
	cb := connector.CallbackDeliveryID(job.ID)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/v1/jobs/" + job.ID + "/deliveries"},
		{http.MethodPost, "/v1/jobs/" + job.ID + "/deliveries/" + cb + "/redeliver"},
	} {
		r := h.do(req.method, req.path, nil, map[string]string{"X-API-Key": other})
		expectError(t, r, http.StatusNotFound, connector.ENOTFOUND, "not found")
		r = h.do(req.method, req.path, nil, nil)
		expectError(t, r, http.StatusUnauthorized, connector.EUNAUTHORIZED, "API key required")
	}
	if n := len(h.queue.enqueuedDeliveries()); n != 0 {
		t.Errorf("expected nothing queued for another key, got %d", n)
	}
}

func TestRedeliverQueuesTheSameDeliveryForOneMoreAttempt(t *testing.T) {
	h := newHarness(t)
	job := h.finishedJobWithCallback()
	cb := connector.CallbackDeliveryID(job.ID)
	h.record(job, &connector.DeliveryAttempt{DeliveryID: cb, Event: connector.EventJobCompleted, StatusCode: 500, Outcome: connector.OutcomeFailed})

	r := h.do(http.MethodPost, "/v1/jobs/"+job.ID+"/deliveries/"+cb+"/redeliver", nil, map[string]string{"X-API-Key": h.key})
	expectStatus(t, r, http.StatusAccepted)
	if r.str("delivery_id") != cb || r.str("status") != "queued" || r.header.Get("Location") != h.url+"/v1/jobs/"+job.ID+"/deliveries" {
		t.Errorf("expected 202 naming the delivery, queued, Location the list; got %s, Location %q", truncate(r.body), r.header.Get("Location"))
	}
	want := connector.Delivery{ID: cb, JobID: job.ID, Owner: job.Owner, Event: connector.EventJobCompleted, Redeliver: true}
	if got := h.queue.enqueuedDeliveries(); len(got) != 1 || got[0] != want {
		t.Errorf("expected %+v queued, got %+v", want, got)
	}
}

func TestRedeliverRefusesUnknownDeliveriesAndGoneHooks(t *testing.T) {
	h := newHarness(t)
	job := h.finishedJobWithCallback()
	ctx := context.Background()
	owner := job.Owner
	for _, hk := range []*connector.Hook{
		{ID: "h_live", TargetURL: "https://hooks.example.com/a", Event: connector.EventJobFinished, Owner: owner},
		{ID: "h_off", TargetURL: "https://hooks.example.com/b", Event: connector.EventJobFinished, Owner: owner},
	} {
		if err := h.store.Hooks.Create(ctx, hk); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.store.Hooks.Disable(ctx, "h_off"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"h_live", "h_off", "h_deleted"} {
		h.record(job, &connector.DeliveryAttempt{DeliveryID: connector.HookDeliveryID(job.ID, id), HookID: id,
			Event: connector.EventJobCompleted, Outcome: connector.OutcomeFailed})
	}
	post := func(deliveryID string) *response {
		return h.do(http.MethodPost, "/v1/jobs/"+job.ID+"/deliveries/"+deliveryID+"/redeliver", nil, map[string]string{"X-API-Key": h.key})
	}
	expectError(t, post("msg_nope"), http.StatusNotFound, connector.ENOTFOUND, "delivery msg_nope")
	expectError(t, post(connector.HookDeliveryID(job.ID, "h_off")), http.StatusConflict, connector.EDISABLED, "410 Gone")
	expectError(t, post(connector.HookDeliveryID(job.ID, "h_deleted")), http.StatusNotFound, connector.ENOTFOUND, "was deleted")
	expectStatus(t, post(connector.HookDeliveryID(job.ID, "h_live")), http.StatusAccepted)
	if got := h.queue.enqueuedDeliveries(); len(got) != 1 || got[0].HookID != "h_live" || !got[0].Redeliver {
		t.Errorf("expected only the live hook's redelivery queued, got %+v", got)
	}

	h.queue.mu.Lock()
	h.queue.fail = &connector.Error{Code: connector.EUNAVAILABLE, Message: "queue unavailable", RetryAfter: 5 * time.Second, Err: errors.New("down")}
	h.queue.mu.Unlock()
	r := post(connector.HookDeliveryID(job.ID, "h_live"))
	expectError(t, r, http.StatusServiceUnavailable, connector.EUNAVAILABLE, "queue unavailable")
	if r.header.Get("Retry-After") != "5" {
		t.Errorf("expected Retry-After 5 with the queue down, got %q", r.header.Get("Retry-After"))
	}
}
