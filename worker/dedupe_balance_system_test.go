package worker_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// shown is a balance as a message prints it.
func shown(credits *int64) string {
	if credits == nil {
		return "null"
	}
	return strconv.FormatInt(*credits, 10)
}

// repeatJob posts body with ?wait and returns the completed job's balance
// and the job it was deduplicated from.
func (s *system) repeatJob(body string) (credits *int64, from string) {
	s.T.Helper()
	st, _, data := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
	var j struct {
		Status           string `json:"status"`
		DeduplicatedFrom string `json:"deduplicated_from"`
		Result           *struct {
			CreditsRemaining *int64 `json:"credits_remaining"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &j); err != nil || st != http.StatusOK || j.Status != "completed" || j.Result == nil {
		s.T.Fatalf("POST %s: %d %s", body, st, data)
	}
	return j.Result.CreditsRemaining, j.DeduplicatedFrom
}

// TestADeduplicatedRepeatReportsTodaysBalance: job A is charged (N-1), job
// B is charged (N-2), then a repeat of A completes from A's result,
// uncharged, and reports the account's balance now, N-2: not A's N-1
// (a client's credit count would go up), not none.
func TestADeduplicatedRepeatReportsTodaysBalance(t *testing.T) {
	s := startSystem(t)
	n := s.Credits()
	a, _ := s.repeatJob(`{"image_url":"` + s.Samples + `/photo.png"}`)
	if a == nil || *a != n-1 {
		t.Fatalf("job A's balance %s, want %d", shown(a), n-1)
	}
	if b, _ := s.repeatJob(`{"image_url":"` + s.Samples + `/screenshot.png"}`); b == nil || *b != n-2 {
		t.Fatalf("job B's balance %s, want %d", shown(b), n-2)
	}
	repeat, from := s.repeatJob(`{"image_url":"` + s.Samples + `/photo.png"}`)
	if from == "" {
		t.Fatal("the repeat of A was not deduplicated")
	}
	if repeat == nil || *repeat != n-2 {
		t.Errorf("the repeat reports %s credits remaining; want %d (the account's now)", shown(repeat), n-2)
	}
	if got := s.Credits(); got != n-2 {
		t.Errorf("the account holds %d after the repeat; want %d (the repeat is free)", got, n-2)
	}
}

// TestARepeatWhoseBalanceCannotBeReadCompletesWithoutOne: when the
// compression API's key check fails, a deduplicated repeat still
// completes, uncharged, and its balance is null (never the earlier job's).
func TestARepeatWhoseBalanceCannotBeReadCompletesWithoutOne(t *testing.T) {
	var failValidate atomic.Bool
	s := startSystem(t, func(o *systemtest.Options) {
		target, err := url.Parse(o.UpstreamURL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if failValidate.Load() && strings.HasSuffix(r.URL.Path, "/validate") {
				http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		o.UpstreamURL = front.URL + target.Path
	})
	n := s.Credits()
	if a, _ := s.repeatJob(`{"image_url":"` + s.Samples + `/photo.png"}`); a == nil || *a != n-1 {
		t.Fatalf("job A's balance %s, want %d", shown(a), n-1)
	}
	failValidate.Store(true)
	repeat, from := s.repeatJob(`{"image_url":"` + s.Samples + `/photo.png"}`)
	if from == "" {
		t.Fatal("the repeat was not deduplicated")
	}
	if repeat != nil {
		t.Errorf("the repeat reports %d credits remaining though the key check failed; want null", *repeat)
	}
	if got := s.Credits(); got != n-1 {
		t.Errorf("the account holds %d after the repeat; want %d", got, n-1)
	}
}
