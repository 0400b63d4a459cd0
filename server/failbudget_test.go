package server_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/imgflow/imgflow/connector"
)

// A key whose jobs failed uncharged past its budget gets 429
// too_many_failures with Retry-After on every way of making a job (JSON,
// a raw body, a batch), nothing made or queued; another key is not held.
func TestAKeyPastItsFreeFailuresIsRefusedNewJobs(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.FreeFailuresPerHour = 2 })
	auth := map[string]string{"X-API-Key": h.key}
	for range 2 {
		r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/missing.png"}, auth)
		expectStatus(t, r, http.StatusAccepted)
		if _, err := h.store.Jobs.Update(context.Background(), r.str("id"), func(j *connector.Job) error {
			j.Status = connector.StatusFailed
			j.Error = &connector.JobError{Code: connector.EFETCH, Message: "the image URL answered 404"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	queued := len(h.queue.enqueued())
	for _, c := range []struct {
		name string
		r    *response
	}{
		{"JSON", h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/a.png"}, auth)},
		{"raw body", h.do("POST", "/v1/jobs", bytes.NewReader(tinyPNG(t)), map[string]string{"X-API-Key": h.key, "Content-Type": "image/png"})},
		{"batch", h.postJSON("/v1/batches", map[string]any{"items": []map[string]any{{"image_url": "https://images.example.com/a.png"}}}, auth)},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, c.r, http.StatusTooManyRequests, connector.EFAILBUDGET, "IMGFLOW_FREE_FAILURES_PER_HOUR")
			if got := c.r.header.Get("Retry-After"); got != "1800" {
				t.Errorf("Retry-After = %q, want 1800 (one interval of 2 an hour)", got)
			}
		})
	}
	if got := len(h.queue.enqueued()); got != queued {
		t.Fatalf("refused jobs were queued: %d, want %d", got, queued)
	}
	other, _, err := h.ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := h.postJSON("/v1/jobs", map[string]any{"image_url": "https://images.example.com/a.png"}, map[string]string{"X-API-Key": other})
	expectStatus(t, r, http.StatusAccepted)
}
