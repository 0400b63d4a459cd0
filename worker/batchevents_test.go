package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// submitBatch stores a batch of n URL items (callback to callbackURL when
// set) and enqueues them; the worker counts them and, after the last,
// sends batch.finished.
func (h *harness) submitBatch(n int, callbackURL string) *connector.Batch {
	h.t.Helper()
	h.cfg.Batches = h.store.Batches
	ctx := context.Background()
	url := "https://images.test/batch.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(h.t, "photo.png")), MIMEType: "image/png", Filename: "photo.png"})
	b := &connector.Batch{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.BatchRunning, Owner: h.owner, CallbackURL: callbackURL}
	var jobs []*connector.Job
	for i := range n {
		job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: h.owner,
			SealedKey: h.keyring.Seal(h.apiKey), Input: connector.JobInput{Kind: connector.InputURL, URL: url}, BatchID: b.ID, BatchIndex: &i}
		b.JobIDs = append(b.JobIDs, job.ID)
		jobs = append(jobs, job)
	}
	b.Counts.Total = n
	if err := h.store.Batches.Create(ctx, b); err != nil {
		h.t.Fatalf("CreateBatch: %v", err)
	}
	for _, job := range jobs {
		if err := h.store.Jobs.Create(ctx, job); err != nil {
			h.t.Fatalf("CreateJob: %v", err)
		}
	}
	return b
}

func (h *harness) enqueueBatch(b *connector.Batch) {
	for _, id := range b.JobIDs {
		h.enqueue(id)
	}
}

// waitBatchFinished waits until batch b is finished with its batch.finished
// event queued.
func (h *harness) waitBatchFinished(b *connector.Batch) {
	h.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := h.store.Batches.Get(ctx, b.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		_, queued, err := h.store.Batches.EndsCounted(ctx, b.ID, b.JobIDs)
		if err != nil {
			h.t.Fatal(err)
		}
		if got.Status == connector.BatchFinished && queued {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("batch %s %+v, event queued %v: want finished with its event queued", got.Status, got.Counts, queued)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// batchDeliveries is the key's delivery log's batch.finished entries.
func (h *harness) batchDeliveries() []*connector.DeliveryRecord {
	h.t.Helper()
	page, err := h.store.Hooks.ListDeliveries(context.Background(), h.owner, connector.DeliveryFilter{Limit: 100})
	if err != nil {
		h.t.Fatalf("ListDeliveries: %v", err)
	}
	var out []*connector.DeliveryRecord
	for _, d := range page.Deliveries {
		if d.Event == connector.EventBatchFinished {
			out = append(out, d)
		}
	}
	return out
}

// batch.finished goes through the one delivery path: the batch's callback
// and its hook each get one signed event, and both deliveries are in the
// key's delivery log (GET /v1/deliveries), named by the batch's message,
// with the webhook-ids they always had.
func TestBatchFinishedIsDeliveredThroughTheDeliveryLog(t *testing.T) {
	h := newHarness(t)
	cb, hook := newReceiver(t), newReceiver(t)
	h.newHook("hook_batches", connector.EventBatchFinished, hook.URL)
	b := h.submitBatch(2, cb.URL+"/done?sig=1")
	h.start()
	h.enqueueBatch(b)

	waitFor(t, "batch.finished at the callback and the hook", func() bool { return cb.count() == 1 && hook.count() == 1 })
	var records []*connector.DeliveryRecord
	waitFor(t, "both batch.finished deliveries logged", func() bool { records = h.batchDeliveries(); return len(records) == 2 })
	byID := map[string]*connector.DeliveryRecord{}
	for _, r := range records {
		byID[r.ID] = r
	}
	c, k := byID[connector.BatchCallbackDeliveryID(b.ID)], byID[connector.BatchHookDeliveryID(b.ID, "hook_batches")]
	if c == nil || c.Kind != connector.KindCallback || c.Status != connector.DeliveryDelivered || c.MessageID == "" || c.Target != cb.URL+"/done" {
		t.Errorf("callback delivery: expected delivered, logged under the batch's message, target without query, got %+v", c)
	}
	if k == nil || k.Kind != connector.KindHook || k.HookID != "hook_batches" || k.Status != connector.DeliveryDelivered {
		t.Errorf("hook delivery: expected delivered to hook_batches, got %+v", k)
	}
	if got := cb.requests()[0].header.Get("webhook-id"); got != connector.BatchCallbackDeliveryID(b.ID) {
		t.Errorf("webhook-id: expected %s, got %s", connector.BatchCallbackDeliveryID(b.ID), got)
	}
	typ, data := eventOf(t, cb.requests()[0].body)
	if typ != connector.EventBatchFinished || data["id"] != b.ID || data["callback"] != nil {
		t.Errorf("body: expected batch.finished of %s without its callback state, got %s %v", b.ID, typ, data)
	}
	// The batch's own callback state is written after the delivery is
	// logged (recordCallback), so it may trail the log by a moment.
	waitFor(t, "the batch's callback state delivered", func() bool {
		got, err := h.store.Batches.Get(context.Background(), b.ID)
		return err == nil && got.Callback != nil && got.Callback.Status == connector.DeliveryDelivered
	})
}

// A disabled hook and a disabled callback URL get no batch.finished: each
// delivery is logged as not sent, so /recover sends it once enabled.
func TestBatchFinishedIsNotSentToADisabledEndpoint(t *testing.T) {
	h := newHarness(t)
	cb, hook := newReceiver(t), newReceiver(t)
	h.newHook("hook_off", connector.EventBatchFinished, hook.URL)
	ctx := context.Background()
	if _, err := h.store.Hooks.DisableFor(ctx, "hook_off", connector.DisabledFailing, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Hooks.DisableEndpoint(ctx, connector.CallbackEndpointID(h.owner, cb.URL), connector.DisabledGone, time.Now()); err != nil {
		t.Fatal(err)
	}
	b := h.submitBatch(1, cb.URL)
	h.start()
	h.enqueueBatch(b)

	var records []*connector.DeliveryRecord
	waitFor(t, "both batch.finished deliveries logged", func() bool { records = h.batchDeliveries(); return len(records) == 2 })
	for _, r := range records {
		if len(r.Attempts) != 1 || r.Attempts[0].Outcome != connector.OutcomeDropped || r.Status != connector.DeliveryFailed {
			t.Errorf("delivery %s (%s): expected one attempt, not sent (dropped), failed for recovery; got %+v", r.ID, r.Kind, r.Attempts[0])
		}
	}
	if cb.count() != 0 || hook.count() != 0 {
		t.Errorf("expected nothing sent to the disabled endpoints, got %d at the callback, %d at the hook", cb.count(), hook.count())
	}

	// Enabled again, POST /v1/hooks/{id}/recover queues the failed
	// delivery from the key's log (as server/hookops.go builds it): sent.
	if _, err := h.store.Hooks.Enable(ctx, h.owner, "hook_off"); err != nil {
		t.Fatal(err)
	}
	page, err := h.store.Hooks.ListDeliveries(ctx, h.owner, connector.DeliveryFilter{HookID: "hook_off", Status: connector.DeliveryFailed, Limit: 100})
	if err != nil || len(page.Deliveries) != 1 {
		t.Fatalf("recover: expected the hook's failed batch.finished delivery listed, got %+v, %v", page, err)
	}
	r := page.Deliveries[0]
	h.enqueueDelivery(connector.Delivery{ID: r.ID, JobID: r.JobID, MessageID: r.MessageID, HookID: "hook_off", Event: r.Event, Redeliver: true})
	waitFor(t, "the recovered batch.finished at the hook", func() bool { return hook.count() == 1 })
	if typ, data := eventOf(t, hook.requests()[0].body); typ != connector.EventBatchFinished || data["id"] != b.ID {
		t.Errorf("recovered delivery: expected batch.finished of %s, got %s %v", b.ID, typ, data)
	}
}

func (h *harness) enqueueDelivery(d connector.Delivery) {
	h.t.Helper()
	if err := h.queue.EnqueueDelivery(context.Background(), d); err != nil {
		h.t.Fatalf("EnqueueDelivery: %v", err)
	}
}

// batch.finished deliveries that keep failing count toward the endpoint's
// auto-disable like any other.
func TestFailingBatchFinishedDeliveriesDisableTheHook(t *testing.T) {
	h := newHarness(t)
	h.cfg.DeliverySchedule = []time.Duration{0}
	for range 12 {
		h.cfg.DeliverySchedule = append(h.cfg.DeliverySchedule, 300*time.Millisecond)
	}
	h.cfg.Endpoint.DisableAfter = 400 * time.Millisecond
	failing := newTimedReceiver(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) })
	h.newHook("hook_failing", connector.EventBatchFinished, failing.URL)
	b := h.submitBatch(1, "")
	h.start()
	h.enqueueBatch(b)

	waitFor(t, "the hook disabled", func() bool {
		hk, err := h.store.Hooks.Get(context.Background(), "hook_failing")
		return err == nil && hk.Disabled
	})
	hk, _ := h.store.Hooks.Get(context.Background(), "hook_failing")
	if hk.DisabledReason != connector.DisabledFailing || failing.count() < 2 {
		t.Errorf("expected the hook disabled for failing after at least 2 attempts, got reason %q after %d", hk.DisabledReason, failing.count())
	}
	// The last attempt is logged after the endpoint's failure is counted
	// (and the hook disabled): wait for the log to catch up.
	var records []*connector.DeliveryRecord
	waitFor(t, "the failed batch.finished delivery logged with each attempt", func() bool {
		records = h.batchDeliveries()
		return len(records) == 1 && records[0].Status == connector.DeliveryFailed && len(records[0].Attempts) == failing.count()
	})
}

// batch.finished goes to at most MaxHooksPerKey hooks, the oldest, as any
// event does.
func TestBatchFinishedKeepsTheHookCap(t *testing.T) {
	h := newHarness(t)
	h.cfg.MaxHooksPerKey = 1
	first, second := newReceiver(t), newReceiver(t)
	h.newHook("hook_a_first", connector.EventBatchFinished, first.URL)
	h.newHook("hook_b_second", connector.EventBatchFinished, second.URL)
	b := h.submitBatch(1, "")
	h.start()
	h.enqueueBatch(b)

	waitFor(t, "batch.finished at the first hook", func() bool { return first.count() == 1 })
	waitFor(t, "the batch counted finished", func() bool {
		got, err := h.store.Batches.Get(context.Background(), b.ID)
		return err == nil && got.FinishedAt != nil
	})
	if n := len(h.batchDeliveries()); n != 1 || second.count() != 0 {
		t.Errorf("expected one batch.finished delivery (the cap), got %d logged, %d at the hook past the cap", n, second.count())
	}
}

// batch.finished carries its batch's owner, so the delivery key share
// places it as it places a job's events.
func TestBatchFinishedDeliveriesCarryTheirOwner(t *testing.T) {
	h := newHarness(t)
	cb := newReceiver(t)
	b := h.submitBatch(1, cb.URL+"/done")
	h.start()
	h.enqueueBatch(b)
	waitFor(t, "batch.finished at the callback", func() bool { return cb.count() == 1 })
	inspector := asynq.NewInspectorFromRedisClient(h.redis.Client)
	var found []connector.Delivery
	waitFor(t, "the batch.finished task retained", func() bool {
		tasks, _ := inspector.ListCompletedTasks(DeliveryQueue(h.redis.Queue()))
		found = found[:0]
		for _, task := range tasks {
			var d connector.Delivery
			if json.Unmarshal(task.Payload, &d) == nil && d.Event == connector.EventBatchFinished {
				found = append(found, d)
			}
		}
		return len(found) == 1
	})
	if found[0].Owner != h.owner || found[0].JobID != "" {
		t.Fatalf("batch.finished delivery %+v: want owner %s and no job", found[0], h.owner)
	}
}
