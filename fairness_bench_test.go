package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/system"
)

// BenchmarkFairnessUnderFlood is the fairness bound, on a
// 4-worker deployment (serve + work, Concurrency 4, the defaults
// otherwise: DeliveryConcurrency 4), on each dispatch:
//
//   - key B has 25 hooks at a receiver that answers after 14 s and makes
//     100 jobs: 2,500 slow deliveries;
//   - key A posts a batch of 40 image URLs that answer after 10 s with
//     something that is not an image (every item fails, nothing charged);
//   - key C then posts single jobs (?wait=25), one per b.N, and each must
//     complete within 12 s: one slow fetch may be ahead of it, not forty.
//
// Time is scaled by FAIRNESS_SCALE (default 0.1: a 1 s fetch, a 1.4 s
// receiver, a 1.2 s bound; FAIRNESS_SCALE=1 runs the audit's own
// figures). ns/op is C's mean latency; c-max-s its worst, bound-s the
// bound it is held to (the benchmark fails past it). "fair" is fair
// dispatch, the default, with no key limit (A may hold every worker
// between turns: C waits for the first to free, one slow fetch at most);
// the asynq rows pin IMGFLOW_DISPATCH=asynq, its default share (3 of 4
// per process) and, for comparison, IMGFLOW_KEY_SHARE=-1, which holds
// nothing.
//
//	go test -run '^$' -bench BenchmarkFairnessUnderFlood -benchtime 3x .
func BenchmarkFairnessUnderFlood(b *testing.B) {
	scale := 0.1
	if v, err := strconv.ParseFloat(os.Getenv("FAIRNESS_SCALE"), 64); err == nil && v > 0 {
		scale = v
	}
	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	for _, tc := range []struct {
		name, dispatch string
		share          int
		hold           bool
	}{{"fair", "fair", 0, true}, {"asynq-share=default", "asynq", 0, true}, {"asynq-share=off", "asynq", -1, false}} {
		b.Run(tc.name, func(b *testing.B) {
			fairnessFlood(b, tc.dispatch, tc.share, scaled(10*time.Second), scaled(14*time.Second), scaled(12*time.Second), tc.hold)
		})
	}
}

func fairnessFlood(b *testing.B, dispatch string, share int, fetchDelay, receiverDelay, bound time.Duration, hold bool) {
	r := redistest.New(b)
	png := images.Read(b, "photo.png")
	api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, png), func(o *system.Options) {
		o.MaxJobsPerKey = 0 // B's 100 jobs at once
		o.Dispatch, o.KeyShare = dispatch, share
	})

	var fetching, receiving atomic.Int64
	slowImages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetching.Add(1)
		time.Sleep(fetchDelay)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "this is not an image")
	}))
	b.Cleanup(slowImages.Close)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		receiving.Add(1)
		io.Copy(io.Discard, r.Body)
		time.Sleep(receiverDelay)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(receiver.Close)
	startWorker(4)

	post := func(key, path string, body any) (int, []byte) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, api+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", key)
		res, err := benchClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, out
	}
	const keyA, keyB, keyC = "sk_fair_flood_batch_0000", "sk_fair_flood_hooks_0000", "sk_fair_single_job_0000"
	b64 := base64.StdEncoding.EncodeToString(png)

	// B: 25 hooks, 100 jobs: 2,500 deliveries to a slow receiver.
	for i := range 25 {
		if st, out := post(keyB, "/v1/hooks", map[string]any{"target_url": fmt.Sprintf("%s/hook/%d", receiver.URL, i), "event": "job.finished"}); st != http.StatusCreated {
			b.Fatalf("hook %d: %d %s", i, st, out)
		}
	}
	for i := range 100 {
		if st, out := post(keyB, "/v1/jobs", map[string]any{"image_base64": b64, "metadata": map[string]any{"i": i}}); st != http.StatusAccepted && st != http.StatusOK {
			b.Fatalf("B's job %d: %d %s", i, st, out)
		}
	}
	// A: a batch of 40 slow URLs that fail.
	items := make([]map[string]any, 40)
	for i := range items {
		items[i] = map[string]any{"image_url": fmt.Sprintf("%s/img/%d.png", slowImages.URL, i)}
	}
	if st, out := post(keyA, "/v1/batches", map[string]any{"items": items}); st != http.StatusAccepted {
		b.Fatalf("A's batch: %d %s", st, out)
	}
	// The flood is on once deliveries and A's fetches are under way.
	for deadline := time.Now().Add(30 * time.Second); receiving.Load() < 4 || fetching.Load() < 1; {
		if time.Now().After(deadline) {
			b.Fatalf("the flood did not start: %d deliveries, %d fetches", receiving.Load(), fetching.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}

	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		st, out := post(keyC, "/v1/jobs?wait=25", map[string]any{"image_base64": b64, "metadata": map[string]any{"n": i}})
		took := time.Since(start)
		worst = max(worst, took)
		if st != http.StatusOK || !bytes.Contains(out, []byte(`"status":"completed"`)) {
			if hold {
				b.Errorf("C's job %d: %d after %v, not completed: %.200s", i, st, took, out)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(worst.Seconds(), "c-max-s")
	b.ReportMetric(bound.Seconds(), "bound-s")
	b.ReportMetric(float64(fetching.Load()), "a-fetches")
	b.ReportMetric(float64(receiving.Load()), "b-deliveries")
	if hold && worst > bound {
		b.Errorf("key C's job took %v behind the flood; the bound is %v", worst, bound)
	}
}
