package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/definitions"
	"github.com/imgflow/imgflow/server"
)

func TestHooksAreCappedPerKeyAndListedInPages(t *testing.T) {
	h := newHarness(t, func(cfg *harnessConfig) { cfg.MaxHooksPerKey = 3 })
	auth := map[string]string{"X-API-Key": h.key}
	for i := range 3 {
		expectStatus(t, h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/" + strconv.Itoa(i)}, auth), http.StatusCreated)
	}
	expectError(t, h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/4"}, auth), http.StatusConflict, connector.ETOOMANYHOOKS, "3 hooks")

	first := h.do(http.MethodGet, "/v1/hooks?limit=2", nil, auth)
	expectStatus(t, first, http.StatusOK)
	cursor := first.str("next_cursor")
	if n := len(first.get("hooks").([]any)); n != 2 || cursor == "" {
		t.Fatalf("first page: expected 2 hooks and a cursor, got %s", first.body)
	}
	second := h.do(http.MethodGet, "/v1/hooks?limit=2&cursor="+cursor, nil, auth)
	if hooks := second.get("hooks").([]any); len(hooks) != 1 || second.str("next_cursor") != "" ||
		hooks[0].(map[string]any)["target_url"] != "https://hooks.example.com/2" {
		t.Errorf("second page: expected the third (newest) hook and no cursor, got %s", second.body)
	}
	expectError(t, h.do(http.MethodGet, "/v1/hooks?cursor=%25", nil, auth), http.StatusBadRequest, connector.EINVALID, "cursor")
	expectError(t, h.do(http.MethodGet, "/v1/hooks?limit=101", nil, auth), http.StatusBadRequest, connector.EINVALID, "limit")
}

func TestCreditsLowHooksTakeAThreshold(t *testing.T) {
	h := newHarness(t)
	auth := map[string]string{"X-API-Key": h.key}
	r := h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/low", "event": "account.credits_low"}, auth)
	if expectStatus(t, r, http.StatusCreated); r.num("threshold") != connector.DefaultCreditsThreshold || r.str("status") != "enabled" {
		t.Errorf("expected the default threshold %d and status enabled, got %s", connector.DefaultCreditsThreshold, r.body)
	}
	expectError(t, h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/x", "event": "job.completed", "threshold": 5}, auth),
		http.StatusBadRequest, connector.EINVALID, "threshold")
	expectError(t, h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/x", "event": "account.credits_low", "threshold": -1}, auth),
		http.StatusBadRequest, connector.EINVALID, "threshold")
}

func TestATestEventIsSignedSentAndLogged(t *testing.T) {
	h := newHarness(t)
	auth := map[string]string{"X-API-Key": h.key}
	hook := h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/t?x=1"}, auth)
	id := hook.str("id")
	r := h.do(http.MethodPost, "/v1/hooks/"+id+"/test", nil, auth)
	expectStatus(t, r, http.StatusOK)
	if r.str("status") != "delivered" || r.num("status_code") != 204 || r.str("event") != "hook.test" || r.str("target") != "https://hooks.example.com/t" {
		t.Errorf("expected the delivered attempt (204, target without query), got %s", r.body)
	}
	sent := h.sender.all()
	if len(sent) != 1 || sent[0].target != "https://hooks.example.com/t?x=1" || sent[0].msgID != r.str("delivery_id") {
		t.Fatalf("expected one send to the hook's target under the delivery id, got %+v", sent)
	}
	wh, _ := standardwebhooks.NewWebhook(hook.str("secret"))
	if len(sent[0].secrets) != 1 || sent[0].secrets[0] != hook.str("secret") {
		t.Errorf("expected it signed with the hook's secret only, got %d secrets", len(sent[0].secrets))
	}
	if err := wh.Verify(sent[0].body, http.Header{"Webhook-Id": {sent[0].msgID}, "Webhook-Timestamp": {strconv.FormatInt(time.Now().Unix(), 10)},
		"Webhook-Signature": {mustSign(t, hook.str("secret"), sent[0].msgID, sent[0].body)}}); err != nil {
		t.Errorf("body does not round-trip: %v", err)
	}
	log := h.do(http.MethodGet, "/v1/deliveries?hook_id="+id, nil, auth)
	if ds := log.get("deliveries").([]any); len(ds) != 1 || ds[0].(map[string]any)["message_id"] != r.str("message_id") ||
		ds[0].(map[string]any)["status"] != "delivered" {
		t.Errorf("expected the test in the key's delivery log, got %s", log.body)
	}
	other, _, _ := h.ledger.CreateAccount(context.Background(), 0)
	expectError(t, h.do(http.MethodPost, "/v1/hooks/"+id+"/test", nil, map[string]string{"X-API-Key": other}), http.StatusNotFound, connector.ENOTFOUND, "")
}

func mustSign(t *testing.T, secret, id string, body []byte) string {
	t.Helper()
	wh, _ := standardwebhooks.NewWebhook(secret)
	sig, err := wh.Sign(id, time.Now(), body)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestRecoveryQueuesTheHooksFailedDeliveriesSinceATimeOnce(t *testing.T) {
	h := newHarness(t)
	auth := map[string]string{"X-API-Key": h.key}
	hookID := h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/r"}, auth).str("id")
	owner := h.keys.KeyHash(h.key)
	ctx := context.Background()
	now := time.Now().UTC()
	outcomes := map[string]connector.AttemptOutcome{}
	for i, o := range []connector.AttemptOutcome{connector.OutcomeFailed, connector.OutcomeDelivered, connector.OutcomeGone, connector.OutcomeRetrying, connector.OutcomeFailed} {
		j := &connector.Job{ID: "0190a0a0-0000-7000-8000-00000000000" + strconv.Itoa(i), Status: connector.StatusCompleted, Owner: owner}
		if err := h.store.Jobs.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		at := now.Add(time.Duration(i-1) * time.Minute) // the first before `since`
		h.store.Hooks.RecordDeliveryAttempt(ctx, j, &connector.DeliveryAttempt{DeliveryID: connector.HookDeliveryID(j.ID, hookID), HookID: hookID,
			Event: connector.EventJobCompleted, At: at, Outcome: o})
		outcomes[connector.HookDeliveryID(j.ID, hookID)] = o
	}
	r := h.postJSON("/v1/hooks/"+hookID+"/recover", map[string]any{"since": now.Add(-30 * time.Second).Format(time.RFC3339)}, auth)
	expectStatus(t, r, http.StatusAccepted)
	queued := h.queue.enqueuedDeliveries()
	if r.num("queued") != 2 || len(queued) != 2 {
		t.Fatalf("expected the 2 deliveries since then that ended failed (gone, failed) queued, got %s and %+v", r.body, queued)
	}
	for _, d := range queued {
		if o := outcomes[d.ID]; (o != connector.OutcomeFailed && o != connector.OutcomeGone) || !d.Redeliver || d.HookID != hookID || d.JobID == "" {
			t.Errorf("queued %+v (outcome %s); expected one-attempt redeliveries of failed deliveries", d, o)
		}
	}
	expectError(t, h.postJSON("/v1/hooks/"+hookID+"/recover", map[string]any{"since": "last week"}, auth), http.StatusBadRequest, connector.EINVALID, "since")
	expectError(t, h.postJSON("/v1/hooks/"+hookID+"/recover", map[string]any{}, auth), http.StatusBadRequest, connector.EINVALID, "since")
	expectError(t, h.postJSON("/v1/hooks/"+hookID+"/recover", map[string]any{"since": now.Add(time.Hour).Format(time.RFC3339)}, auth),
		http.StatusBadRequest, connector.EINVALID, "future")
}

func TestRotatingTheCallbackSecretChangesTheAccountsSecret(t *testing.T) {
	h := newHarness(t)
	auth := map[string]string{"X-API-Key": h.key}
	before := h.do(http.MethodGet, "/v1/account", nil, auth).str("webhook_secret")
	r := h.do(http.MethodPost, "/v1/account/rotate-secret", nil, auth)
	expectStatus(t, r, http.StatusOK)
	after := h.do(http.MethodGet, "/v1/account", nil, auth).str("webhook_secret")
	if !strings.HasPrefix(r.str("webhook_secret"), "whsec_") || r.str("webhook_secret") == before || after != r.str("webhook_secret") || r.str("previous_secret_expires_at") == "" {
		t.Errorf("expected a new secret, shown by /v1/account from now on, with the overlap's end; before %s, rotation %s, after %s", before, r.body, after)
	}
}

func TestEventTypesListEveryEventWithAStandaloneSchema(t *testing.T) {
	h := newHarness(t, func(cfg *harnessConfig) {
		cfg.Definitions = func(base string) ([]server.DefinitionFile, []byte, error) {
			doc, err := definitions.OpenAPI(base)
			return nil, doc, err
		}
	})
	r := h.do(http.MethodGet, "/v1/event-types", nil, nil)
	expectStatus(t, r, http.StatusOK)
	got := map[string]map[string]any{}
	for _, e := range r.get("event_types").([]any) {
		e := e.(map[string]any)
		got[e["type"].(string)] = e["schema"].(map[string]any)
	}
	for _, typ := range []string{"job.completed", "job.failed", "hook.disabled", "hook.test", "account.credits_low"} {
		if got[typ] == nil {
			t.Errorf("expected %s listed with a schema, got %s", typ, r.body)
		}
	}
	if strings.Contains(string(r.body), "$ref") {
		t.Errorf("expected every schema to stand alone, without $ref")
	}
	data := got["job.completed"]["properties"].(map[string]any)["data"].(map[string]any)
	if _, ok := data["properties"].(map[string]any)["result"]; !ok {
		t.Errorf("expected job.completed's data to be the job's schema, got %v", data)
	}
}
