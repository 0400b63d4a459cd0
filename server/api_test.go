package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/server"
)

func TestAccountShowsTheKeyCheckAndTheCallbackSecret(t *testing.T) {
	h := newHarness(t)
	r := h.do(http.MethodGet, "/v1/account", nil, map[string]string{"X-API-Key": h.key})
	expectStatus(t, r, http.StatusOK)
	if r.get("valid") != true || r.num("credits_remaining") != 500 || r.num("max_image_size") != 10485760 || r.str("subscription_type") != "Free" {
		t.Errorf("account = %s; want valid Free account with 500 credits", r.body)
	}
	if want := h.keys.WebhookSecret("callback", h.keys.KeyHash(h.key)); r.str("webhook_secret") != want {
		t.Errorf("webhook_secret = %q, want the key's callback secret", r.str("webhook_secret"))
	}
	bad := h.do(http.MethodGet, "/v1/account", nil, map[string]string{"X-API-Key": "sk_not_a_real_key"})
	expectError(t, bad, http.StatusUnauthorized, connector.EUNAUTHORIZED, "Invalid API key")
}

func TestHooksAreCreatedListedAndDeletedPerKey(t *testing.T) {
	h := newHarness(t)
	r := h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/catch/1", "event": "job.completed"}, nil)
	expectStatus(t, r, http.StatusCreated)
	id := r.str("id")
	if r.header.Get("Location") != h.url+"/v1/hooks/"+id || !strings.HasPrefix(r.str("secret"), "whsec_") {
		t.Fatalf("Location %q, body %s; want the hook's URL and a whsec_ secret", r.header.Get("Location"), r.body)
	}
	auth := map[string]string{"X-API-Key": h.key}
	list := h.do(http.MethodGet, "/v1/hooks", nil, auth)
	if hooks := list.get("hooks").([]any); len(hooks) != 1 || hooks[0].(map[string]any)["id"] != id {
		t.Fatalf("hooks = %s; want the one hook", list.body)
	}
	other, _, _ := h.ledger.CreateAccount(context.Background(), 0)
	expectError(t, h.do(http.MethodDelete, "/v1/hooks/"+id, nil, map[string]string{"X-API-Key": other}), 404, connector.ENOTFOUND, "")
	expectError(t, h.do(http.MethodGet, "/v1/hooks/"+id, nil, map[string]string{"X-API-Key": other}), 404, connector.ENOTFOUND, "")

	del := h.do(http.MethodDelete, strings.TrimPrefix(r.header.Get("Location"), h.url), nil, auth)
	expectStatus(t, del, http.StatusNoContent)
	expectError(t, h.do(http.MethodDelete, "/v1/hooks/"+id, nil, auth), 404, connector.ENOTFOUND, "")

	cases := []struct {
		name string
		body string
		code connector.ErrorCode
		text string
	}{
		{"no target", `{"event":"job.completed"}`, connector.EINVALID, "target_url"},
		{"bad event", `{"target_url":"https://hooks.example.com/x","event":"job.started"}`, connector.EINVALID, "event"},
		{"private target", `{"target_url":"http://169.254.169.254/latest","event":"job.failed"}`, connector.EURLREFUSED, "target_url"},
		{"bad JSON", `{"target_url":`, connector.EINVALID, "JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectError(t, h.postJSON("/v1/hooks", tc.body, nil), 400, tc.code, tc.text)
		})
	}
}

func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.do(http.MethodGet, "/v2/nothing", nil, nil), 404, connector.ENOTFOUND, "Not found")
	r := h.do(http.MethodPut, "/v1/jobs", strings.NewReader("{}"), map[string]string{"X-API-Key": h.key})
	expectStatus(t, r, http.StatusMethodNotAllowed)
	if r.str("error") != "Method not allowed" {
		t.Errorf("error = %q, want Method not allowed", r.str("error"))
	}
}

func TestHealthAndReady(t *testing.T) {
	h := newHarness(t)
	r := h.do(http.MethodGet, "/health", nil, nil)
	expectStatus(t, r, http.StatusOK)
	if r.str("status") != "healthy" || r.str("service") != "imgflow" {
		t.Errorf("health = %s", r.body)
	}
	for _, path := range []string{"/ready", "/metrics"} {
		// On the ops listener only (system.OpsHandler).
		expectStatus(t, h.do(http.MethodGet, path, nil, nil), http.StatusNotFound)
	}
}

// TestRedisDownIs503WithRetryAfter points the API at a Redis that does not
// answer: every request that needs storage gets 503 and Retry-After, never
// a 500.
func TestRedisDownIs503WithRetryAfter(t *testing.T) {
	dead := redisstore.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), redisstore.Options{})
	h := newHarness(t, func(c *harnessConfig) {
		c.Jobs, c.Blobs, c.Idempotency, c.Accounts, c.Hooks, c.OpLimiter = dead.Jobs, dead.Blobs, dead.Idempotency, dead.Accounts, dead.Hooks, dead.Hooks
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	})
	auth := map[string]string{"X-API-Key": h.key}
	for _, r := range []*response{
		h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil),
		h.do(http.MethodGet, "/v1/jobs", nil, auth),
		h.do(http.MethodGet, "/v1/jobs/0190c0de-0000-7000-8000-000000000000", nil, auth),
		h.do(http.MethodGet, "/v1/hooks", nil, auth),
	} {
		expectError(t, r, http.StatusServiceUnavailable, connector.EUNAVAILABLE, "")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After: %s", r.body)
		}
	}
}

func TestDefinitionsAreServedForThePublicURL(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) {
		c.Definitions = func(base string) ([]server.DefinitionFile, []byte, error) {
			return []server.DefinitionFile{{Platform: "zapier", Name: "app.json", Data: []byte(`{"base":"` + base + `"}`)}},
				[]byte(`{"openapi":"3.1.0","servers":[{"url":"` + base + `"}]}`), nil
		}
	})
	idx := h.do(http.MethodGet, "/v1/definitions", nil, nil)
	expectStatus(t, idx, http.StatusOK)
	if !strings.Contains(string(idx.body), h.url+"/v1/definitions/zapier/app.json") {
		t.Errorf("index = %s; want a link under the public URL", idx.body)
	}
	f := h.do(http.MethodGet, "/v1/definitions/zapier/app.json", nil, nil)
	expectStatus(t, f, http.StatusOK)
	if f.str("base") != h.url {
		t.Errorf("file = %s; want it rendered for %s", f.body, h.url)
	}
	expectStatus(t, h.do(http.MethodGet, "/openapi.json", nil, nil), http.StatusOK)
	expectError(t, h.do(http.MethodGet, "/v1/definitions/nope", nil, nil), 404, connector.ENOTFOUND, "nope")
}

// TestNeverConfirmedKeyIsRefusedWhileTheKeyCheckIsUnreachable: with the
// compression API unreachable, a key it never confirmed queues nothing
// (failopen_test.go covers the keys it did confirm).
func TestNeverConfirmedKeyIsRefusedWhileTheKeyCheckIsUnreachable(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) {
		c.Compressor = upstream.New("http://127.0.0.1:1/api")
	})
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	expectError(t, r, http.StatusServiceUnavailable, connector.EUPSTREAMDOWN, "retry later")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if n := len(h.queue.enqueued()); n != 0 {
		t.Errorf("enqueued %d jobs, want 0", n)
	}
	// /v1/account needs the live answer: it says the key cannot be checked.
	acct := h.do(http.MethodGet, "/v1/account", nil, map[string]string{"X-API-Key": h.key})
	expectError(t, acct, http.StatusServiceUnavailable, connector.EUPSTREAMDOWN, "")
}

// A client that goes away mid-request (Ctrl-C during an upload) gets no
// 500 and leaves no error in the log: its request is answered 499, logged
// at Info.
func TestAClientThatGoesAwayIsNotAServerError(t *testing.T) {
	var logs bytes.Buffer
	h := newHarness(t, func(c *harnessConfig) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(`{"image_url":"https://images.example.com/cat.png"}`)).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", h.key)
	rec := httptest.NewRecorder()
	h.api.Handler().ServeHTTP(rec, req)
	if rec.Code != 499 {
		t.Fatalf("status = %d (%s); want 499 for a client that went away", rec.Code, rec.Body)
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("a client that went away was logged as an error:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "client went away") {
		t.Errorf("expected an Info line saying the client went away:\n%s", logs.String())
	}
}
