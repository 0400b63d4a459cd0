package worker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/connector"
)

// timedReceiver is a webhook endpoint on loopback whose answer to request
// n (from 0) answer decides, and which records when each request came.
type timedReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []timedRequest
}

type timedRequest struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newTimedReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *timedReceiver {
	r := &timedReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, timedRequest{at: time.Now(), header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		if answer != nil {
			answer(n, w)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *timedReceiver) requests() []timedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]timedRequest(nil), r.got...)
}

func (r *timedReceiver) count() int { return len(r.requests()) }

// eventOf decodes a delivery's body.
func eventOf(t *testing.T, body []byte) (typ string, data map[string]any) {
	t.Helper()
	var ev struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatalf("delivery body %q: %v", body, err)
	}
	return ev.Type, ev.Data
}

func TestAHookFailingForDisableAfterIsDisabledAndTheOwnersOtherHooksHearOfIt(t *testing.T) {
	h := newHarness(t)
	// asynq keeps retry times in whole seconds: 300ms delays come 0 to 1s apart.
	h.cfg.DeliverySchedule = []time.Duration{0}
	for range 12 {
		h.cfg.DeliverySchedule = append(h.cfg.DeliverySchedule, 300*time.Millisecond)
	}
	h.cfg.Endpoint.DisableAfter = 400 * time.Millisecond
	rec := &recorder{}
	h.cfg.Observer = rec
	h.start()
	failing := newTimedReceiver(t, func(int, http.ResponseWriter) { panic(http.ErrAbortHandler) }) // no answer at all
	watcher := newTimedReceiver(t, nil)
	h.newHook("hook_failing", connector.EventJobFinished, failing.URL)
	h.newHook("hook_watch", connector.EventHookDisabled, watcher.URL)
	h.submitURLJob("")

	waitFor(t, "the hook.disabled event", func() bool { return watcher.count() == 1 })
	hk, err := h.store.Hooks.Get(context.Background(), "hook_failing")
	if err != nil || !hk.Disabled || hk.Status != connector.HookDisabled || hk.DisabledReason != connector.DisabledFailing || hk.DisabledAt == nil {
		t.Fatalf("expected the hook disabled for failing, with a time, got %+v (%v)", hk, err)
	}
	attempts := failing.count()
	if attempts < 2 || attempts >= len(h.cfg.DeliverySchedule) {
		t.Errorf("expected the failing hook to stop after 400ms of failures, before the schedule's end, got %d attempts", attempts)
	}
	d := watcher.requests()[0]
	wh, _ := standardwebhooks.NewWebhook(h.keyring.WebhookSecret("hook", "hook_watch"))
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Errorf("expected hook.disabled signed with the watching hook's secret, got %v", err)
	}
	typ, data := eventOf(t, d.body)
	if typ != connector.EventHookDisabled || data["hook_id"] != "hook_failing" || data["reason"] != connector.DisabledFailing ||
		data["kind"] != connector.KindHook || data["target"] != failing.URL {
		t.Errorf("expected hook.disabled naming hook_failing, its target and the reason, got %s %v", typ, data)
	}
	if !rec.has("endpoint disabled hook failing") {
		t.Errorf("expected the observer told of the disabled endpoint, got %v", rec.events)
	}
	time.Sleep(1500 * time.Millisecond) // time for a few more attempts of the schedule
	if n := failing.count(); n != attempts {
		t.Errorf("expected no attempt after the hook was disabled, got %d more", n-attempts)
	}
	page, err := h.store.Hooks.ListDeliveries(context.Background(), h.owner, connector.DeliveryFilter{HookID: "hook_watch"})
	if err != nil || len(page.Deliveries) != 1 || page.Deliveries[0].MessageID == "" || page.Deliveries[0].Status != connector.DeliveryDelivered {
		t.Errorf("expected the hook.disabled delivery in the key's delivery log, got %+v (%v)", page, err)
	}
}

func TestAHookAnswering410TellsTheOtherHooksOnce(t *testing.T) {
	h := newHarness(t)
	h.start()
	gone := newTimedReceiver(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) })
	watcher := newTimedReceiver(t, nil)
	h.newHook("hook_gone", connector.EventJobCompleted, gone.URL)
	h.newHook("hook_watch", connector.EventHookDisabled, watcher.URL)
	h.newHook("hook_jobs", connector.EventJobFinished, newTimedReceiver(t, nil).URL) // gets no hook.disabled
	h.submitURLJob("")
	h.submitURLJob("")

	waitFor(t, "hook.disabled", func() bool { return watcher.count() >= 1 })
	time.Sleep(300 * time.Millisecond)
	if n := watcher.count(); n != 1 {
		t.Errorf("expected one hook.disabled event, got %d", n)
	}
	if typ, data := eventOf(t, watcher.requests()[0].body); typ != connector.EventHookDisabled || data["reason"] != connector.DisabledGone {
		t.Errorf("expected hook.disabled for gone, got %s %v", typ, data)
	}
	if n := gone.count(); n > 2 {
		t.Errorf("expected at most one request per job to the 410 receiver (both may be in flight), got %d", n)
	}
}

func TestARetryAfterPausesEveryMessageToTheEndpoint(t *testing.T) {
	h := newHarness(t)
	h.start()
	rcv := newTimedReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	h.newHook("hook_busy", connector.EventJobFinished, rcv.URL)
	first := h.submitURLJob("")
	waitFor(t, "the first attempt", func() bool { return rcv.count() == 1 })
	second := h.submitURLJob("")
	h.waitJob(second.ID, "finished", finished)

	waitFor(t, "both events delivered", func() bool { return rcv.count() == 3 })
	reqs := rcv.requests()
	paused := reqs[0].at.Add(2 * time.Second)
	for i, r := range reqs[1:] {
		if r.at.Before(paused) {
			t.Errorf("request %d came %s after the 503 with Retry-After: 2; expected no request to the endpoint for 2s", i+2, r.at.Sub(reqs[0].at))
		}
	}
	ids := map[string]bool{}
	for _, r := range reqs {
		ids[r.header.Get("webhook-id")] = true
	}
	if !ids[connector.HookDeliveryID(first.ID, "hook_busy")] || !ids[connector.HookDeliveryID(second.ID, "hook_busy")] {
		t.Errorf("expected both jobs' events delivered, got ids %v", ids)
	}
	log, _ := h.store.Hooks.DeliveryAttempts(context.Background(), second.ID)
	if len(log) != 1 || log[0].Outcome != connector.OutcomeDelivered {
		t.Errorf("expected the second job's delivery put off, not failed: one attempt, delivered; got %+v", log)
	}
}

func TestTheEndpointRateSpreadsABurst(t *testing.T) {
	h := newHarness(t)
	h.cfg.Endpoint.Rate = 4 // 4 a second, 250ms apart
	h.start()
	rcv := newTimedReceiver(t, nil)
	h.newHook("hook_small", connector.EventJobFinished, rcv.URL)
	const jobs = 12
	start := time.Now() // no slot of the burst is before this
	for range jobs {
		h.submitURLJob("")
	}
	waitFor(t, "every event delivered", func() bool { return rcv.count() == jobs })
	// The (i+1)th request to arrive needed the (i+1)th slot or a later
	// one: no sooner than i*250ms after start, however late any came.
	for i, r := range rcv.requests() {
		if earliest := start.Add(time.Duration(i)*250*time.Millisecond - 5*time.Millisecond); r.at.Before(earliest) {
			t.Errorf("request %d came %s after the burst began; at 4/s expected no sooner than %s", i+1, r.at.Sub(start), time.Duration(i)*250*time.Millisecond)
		}
	}
}

func TestAnEventGoesToAtMostMaxHooksPerKeyHooks(t *testing.T) {
	h := newHarness(t)
	h.cfg.MaxHooksPerKey = 2
	h.start()
	var rcvs []*timedReceiver
	for i := range 3 {
		r := newTimedReceiver(t, nil)
		rcvs = append(rcvs, r)
		h.newHook("hook_"+strconv.Itoa(i), connector.EventJobFinished, r.URL)
		time.Sleep(2 * time.Millisecond) // distinct creation times: oldest first
	}
	job := h.submitURLJob("")
	h.waitJob(job.ID, "finished", finished)
	waitFor(t, "two hooks called", func() bool { return rcvs[0].count()+rcvs[1].count()+rcvs[2].count() >= 2 })
	time.Sleep(300 * time.Millisecond)
	if rcvs[0].count() != 1 || rcvs[1].count() != 1 || rcvs[2].count() != 0 {
		t.Errorf("expected the two oldest hooks called once and the third not, got %d, %d, %d", rcvs[0].count(), rcvs[1].count(), rcvs[2].count())
	}
}

func TestDuringASecretsOverlapDeliveriesCarryBothSignatures(t *testing.T) {
	h := newHarness(t)
	h.start()
	rcv := newTimedReceiver(t, nil)
	h.newHook("hook_rot", connector.EventJobFinished, rcv.URL)
	old := h.keyring.WebhookSecret("hook", "hook_rot")
	rotated, err := h.store.Hooks.RotateSecret(context.Background(), h.owner, "hook_rot", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cb := newTimedReceiver(t, nil)
	oldCallback := h.keyring.WebhookSecret("callback", h.owner)
	v, err := h.store.Hooks.RotateCallbackSecret(context.Background(), h.owner, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.submitURLJob(cb.URL)
	waitFor(t, "the hook and callback deliveries", func() bool { return rcv.count() == 1 && cb.count() == 1 })

	for name, c := range map[string]struct {
		req      timedRequest
		old, new string
	}{
		"hook":     {rcv.requests()[0], old, h.keyring.WebhookSecretVersion("hook", "hook_rot", rotated.SecretVersion)},
		"callback": {cb.requests()[0], oldCallback, h.keyring.WebhookSecretVersion("callback", h.owner, v.Version)},
	} {
		if c.old == c.new {
			t.Fatalf("%s: expected the rotation to change the secret", name)
		}
		for _, secret := range []string{c.old, c.new} {
			wh, _ := standardwebhooks.NewWebhook(secret)
			if err := wh.Verify(c.req.body, c.req.header); err != nil {
				t.Errorf("%s: expected the delivery to verify with the old and the new secret during the overlap; %v (signature %q)",
					name, err, c.req.header.Get("webhook-signature"))
			}
		}
	}
}

func TestAfterTheOverlapOnlyTheNewSecretSigns(t *testing.T) {
	h := newHarness(t)
	h.start()
	rcv := newTimedReceiver(t, nil)
	h.newHook("hook_rot", connector.EventJobFinished, rcv.URL)
	old := h.keyring.WebhookSecret("hook", "hook_rot")
	rotated, err := h.store.Hooks.RotateSecret(context.Background(), h.owner, "hook_rot", time.Now().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.submitURLJob("")
	waitFor(t, "the delivery", func() bool { return rcv.count() == 1 })
	r := rcv.requests()[0]
	wh, _ := standardwebhooks.NewWebhook(old)
	if err := wh.Verify(r.body, r.header); err == nil {
		t.Errorf("expected the old secret refused after the overlap")
	}
	wh, _ = standardwebhooks.NewWebhook(h.keyring.WebhookSecretVersion("hook", "hook_rot", rotated.SecretVersion))
	if err := wh.Verify(r.body, r.header); err != nil {
		t.Errorf("expected the new secret to verify, got %v", err)
	}
}

func TestCreditsLowFiresOnceWhenTheBalanceCrossesTheThreshold(t *testing.T) {
	h := newHarness(t)
	h.start()
	low := newTimedReceiver(t, nil)
	threshold := int64(498)
	hook := &connector.Hook{ID: "hook_low", TargetURL: low.URL, Event: connector.EventCreditsLow, Threshold: &threshold, Owner: h.owner}
	if err := h.store.Hooks.Create(context.Background(), hook); err != nil {
		t.Fatal(err)
	}
	balances := []int64{500, 498, 497, 499, 490}
	h.comp.balances = balances
	for range balances {
		job := h.submitURLJob("")
		h.waitJob(job.ID, "finished", finished)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "two credits_low events", func() bool { return low.count() >= 2 })
	time.Sleep(300 * time.Millisecond)
	reqs := low.requests()
	if len(reqs) != 2 {
		t.Fatalf("expected account.credits_low at 498 (crossing) and at 490 (after rising to 499), got %d events", len(reqs))
	}
	for i, want := range []float64{498, 490} {
		typ, data := eventOf(t, reqs[i].body)
		if typ != connector.EventCreditsLow || data["credits_remaining"] != want || data["threshold"] != float64(threshold) || data["job_id"] == "" {
			t.Errorf("event %d: expected account.credits_low with credits_remaining %v, threshold %d and the job, got %s %v", i+1, want, threshold, typ, data)
		}
	}
}
