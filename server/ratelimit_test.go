package server_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// TestHookTestsAndRecoveriesAreRateLimitedPerKey is the audit's scenario:
// 40 hook tests and 20 recoveries in a row. The first 10 tests (a minute's
// worth) and 6 recoveries (an hour's) pass; the rest are 429 rate_limited
// with Retry-After, having sent nothing; another key is not held back.
func TestHookTestsAndRecoveriesAreRateLimitedPerKey(t *testing.T) {
	h := newHarness(t)
	auth := map[string]string{"X-API-Key": h.key}
	hook := h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/in"}, auth)
	expectStatus(t, hook, http.StatusCreated)
	id := hook.str("id")

	passed, limited := 0, 0
	for i := range 40 {
		r := h.do(http.MethodPost, "/v1/hooks/"+id+"/test", nil, auth)
		switch r.status {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
			limited++
			expectError(t, r, http.StatusTooManyRequests, connector.ERATELIMITED, "IMGFLOW_HOOK_TESTS_PER_MINUTE")
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
				t.Fatalf("test %d: Retry-After %q; want 1 to 60 seconds", i, r.header.Get("Retry-After"))
			}
		default:
			t.Fatalf("test %d: %d %s", i, r.status, r.body)
		}
	}
	if passed != 10 || limited != 30 {
		t.Errorf("40 hook tests: %d sent, %d refused; want 10 and 30", passed, limited)
	}
	h.sender.mu.Lock()
	sent := len(h.sender.sent)
	h.sender.mu.Unlock()
	if sent != 10 {
		t.Errorf("%d test events were sent; want 10 (none for a refused call)", sent)
	}

	passed, limited = 0, 0
	for i := range 20 {
		r := h.postJSON("/v1/hooks/"+id+"/recover", `{"since":"2026-01-01T00:00:00Z"}`, auth)
		switch r.status {
		case http.StatusAccepted:
			passed++
		case http.StatusTooManyRequests:
			limited++
			expectError(t, r, http.StatusTooManyRequests, connector.ERATELIMITED, "IMGFLOW_HOOK_RECOVERS_PER_HOUR")
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("recover %d: 429 without Retry-After", i)
			}
		default:
			t.Fatalf("recover %d: %d %s", i, r.status, r.body)
		}
	}
	if passed != 6 || limited != 14 {
		t.Errorf("20 recoveries: %d passed, %d refused; want 6 and 14", passed, limited)
	}

	// Another key has its own allowance.
	other, _, err := h.ledger.CreateAccount(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	oauth := map[string]string{"X-API-Key": other}
	ohook := h.postJSON("/v1/hooks", map[string]any{"target_url": "https://hooks.example.com/other"}, oauth)
	expectStatus(t, ohook, http.StatusCreated)
	expectStatus(t, h.do(http.MethodPost, "/v1/hooks/"+ohook.str("id")+"/test", nil, oauth), http.StatusOK)
}
