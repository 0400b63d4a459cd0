package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// 10,000 distinct Idempotency-Keys from one key: each is a job of its own,
// answered 202; every record they leave in Redis expires (idempotency
// records within 24 h); the process keeps nothing per key beyond what the
// store holds (a loose bound that includes the embedded miniredis when
// REDIS_URL is unset); a longer key than 255 characters is refused.
func TestTenThousandIdempotencyKeysStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests; not in -short")
	}
	h, key, r := inProcessAPI(t)
	const n = 10000
	body := `{"image_url":"https://images.example/a.png"}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ids := make(map[string]bool, n)
	for i := range n {
		rec := postWithKey(h, key, body, fmt.Sprintf("flood-%05d", i))
		var job struct{ ID string }
		json.Unmarshal(rec.Body.Bytes(), &job)
		if rec.Code != http.StatusAccepted || job.ID == "" {
			t.Fatalf("request %d: %d %s; want 202 with a job", i, rec.Code, rec.Body.String())
		}
		ids[job.ID] = true
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(ids) != n {
		t.Errorf("%d distinct jobs for %d distinct keys", len(ids), n)
	}
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew %.1f MiB for %d keys (%d bytes a key, store included when embedded)", float64(grown)/(1<<20), n, grown/n)
	if grown > n*16<<10 {
		t.Errorf("heap grew %d bytes for %d keys; want under 16 KiB a key", grown, n)
	}

	// A replay still finds its job.
	rec := postWithKey(h, key, body, "flood-00042")
	if rec.Code != http.StatusAccepted {
		t.Errorf("replay of flood-00042: %d %s", rec.Code, rec.Body.String())
	}
	if rec := postWithKey(h, key, body, strings.Repeat("k", 256)); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"invalid_input"`) {
		t.Errorf("a 256-character Idempotency-Key: %d %s; want 400 invalid_input", rec.Code, rec.Body.String())
	}

	// Nothing is kept for ever.
	ctx := context.Background()
	keys, err := r.Client.Keys(ctx, r.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	idem := 0
	for _, k := range keys {
		if strings.HasPrefix(k, r.Prefix+"up:") {
			continue // the reference upstream's accounts, not imgflow's
		}
		if k == r.Prefix+"unqueued" {
			// The notes of new jobs that the worker's sweeper drains
			// (worker/unqueued.go): like asynq's own queue, they wait for
			// a worker, and no worker runs here. Empty, the key is gone.
			continue
		}
		ttl, err := r.Client.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		// PTTL answers -2 for a key gone since KEYS listed it (a short
		// lease that expired in between: what this check wants) and -1
		// for a key without expiry; go-redis keeps both as raw durations.
		if ttl == -2 {
			continue
		}
		if ttl < 0 {
			t.Errorf("%s has no expiry", k)
		}
		if strings.Contains(k, "idem") {
			idem++
			if ttl > 24*time.Hour {
				t.Errorf("%s expires in %s; want within 24 h", k, ttl)
			}
		}
	}
	if idem != n {
		t.Errorf("%d idempotency records for %d keys", idem, n)
	}
}

func postWithKey(h http.Handler, key, body, idemKey string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Idempotency-Key", idemKey)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
