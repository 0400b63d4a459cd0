package worker_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestADeduplicatedRepeatReportsNoStaleBalance: a repeat completed from an
// earlier job's result, after other jobs were charged meanwhile, never
// reports the earlier job's balance (which would make a client's credit
// count go up): it reports none, as it called nothing.
func TestADeduplicatedRepeatReportsNoStaleBalance(t *testing.T) {
	s := startSystem(t)
	balanceOf := func(body string) (*int64, string) {
		t.Helper()
		st, _, data := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
		var j struct {
			Status           string `json:"status"`
			DeduplicatedFrom string `json:"deduplicated_from"`
			Result           *struct {
				CreditsRemaining *int64 `json:"credits_remaining"`
			} `json:"result"`
		}
		if err := json.Unmarshal(data, &j); err != nil || st != http.StatusOK || j.Status != "completed" || j.Result == nil {
			t.Fatalf("POST %s: %d %s", body, st, data)
		}
		return j.Result.CreditsRemaining, j.DeduplicatedFrom
	}
	first, _ := balanceOf(`{"image_url":"` + s.Samples + `/photo.png"}`)
	if first == nil || *first != 499 {
		t.Fatalf("first job's balance %v, want 499", first)
	}
	balanceOf(`{"image_url":"` + s.Samples + `/screenshot.png"}`)
	repeat, from := balanceOf(`{"image_url":"` + s.Samples + `/photo.png"}`)
	if from == "" {
		t.Fatal("the repeat was not deduplicated")
	}
	if repeat != nil && *repeat != s.Credits() {
		t.Errorf("the repeat reports %d credits remaining; the account holds %d", *repeat, s.Credits())
	}
}
