package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/system"
)

// BenchmarkOneKeyFlood is the one-key flood of the fairness acceptance, on
// serve + work (Concurrency 4) against an upstream that takes 20 ms a
// call: a quiet key's ?wait jobs are timed alone (their p90), then key F
// posts FLOOD_JOBS jobs (default 300) at once and the quiet key posts its
// jobs again, one after another, while the flood drains. Rows: asynq's
// queue with the key share off and at its default, and fair dispatch
// (IMGFLOW_DISPATCH=fair, the default) with IMGFLOW_KEY_SHARE at its
// default (no key limit) and at -1: the acceptance's "share on against
// off" for the default dispatch. Reported: the quiet key's p90
// alone and worst under the flood (ms), the flood's drain time (s), and the
// most compress tasks seen in asynq's retry set (parked), which fair
// dispatch must leave at 0 (the benchmark fails otherwise).
//
//	REDIS_URL=redis://127.0.0.1:PORT/0 go test -run '^$' -bench OneKeyFlood -benchtime 1x .
//
// CI's short form: FLOOD_JOBS=60 and -bench 'OneKeyFlood/fair'.
func BenchmarkOneKeyFlood(b *testing.B) {
	flood := 300
	if n, err := strconv.Atoi(os.Getenv("FLOOD_JOBS")); err == nil && n > 0 {
		flood = n
	}
	for _, tc := range []struct {
		name     string
		dispatch string
		share    int
	}{{"asynq-share=off", "asynq", -1}, {"asynq-share=default", "asynq", 0}, {"fair", "fair", 0}, {"fair-share=off", "fair", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				oneKeyFlood(b, flood, tc.dispatch, tc.share)
			}
		})
	}
}

func oneKeyFlood(b *testing.B, flood int, dispatch string, share int) {
	r := redistest.New(b)
	api, startWorker := benchPartsUpstream(b, r, slowUpstream(b, images.Read(b, "screenshot.png"), 20*time.Millisecond),
		func(o *system.Options) { o.Dispatch, o.KeyShare, o.MaxJobsPerKey = dispatch, share, 0 })
	startWorker(4)
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png")) + `"}`)
	const quietJobs = 10
	quiet := func() []time.Duration {
		var took []time.Duration
		for range quietJobs {
			start := time.Now()
			floodPost(b, api+"/v1/jobs?wait=25", "sk_quiet_key_0000", body, http.StatusOK)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took
	}
	alone := quiet()
	p90 := alone[quietJobs*9/10-1]

	ids := make([]string, flood)
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range flood {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ids[i] = floodPost(b, api+"/v1/jobs", "sk_flood_key_0000", body, http.StatusAccepted)
		})
	}
	wg.Wait()
	inspector := asynq.NewInspectorFromRedisClient(r.Client)
	parked := 0
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if info, err := inspector.GetQueueInfo(r.Queue()); err == nil {
				parked = max(parked, info.Retry)
			}
			select {
			case <-stopWatch:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	loaded := quiet()
	for _, id := range ids {
		for {
			var job struct{ Status string }
			json.Unmarshal(floodGet(b, api+"/v1/jobs/"+id, "sk_flood_key_0000"), &job)
			if job.Status == "completed" || job.Status == "failed" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	drain := time.Since(start)
	close(stopWatch)
	<-watched
	b.ReportMetric(float64(p90.Milliseconds()), "quiet-p90-alone-ms")
	b.ReportMetric(float64(loaded[quietJobs-1].Milliseconds()), "quiet-max-flood-ms")
	b.ReportMetric(float64((2*p90 + 100*time.Millisecond).Milliseconds()), "bound-ms")
	b.ReportMetric(drain.Seconds(), "drain-s")
	b.ReportMetric(float64(parked), "parked-max")
	if dispatch == "fair" && parked > 0 {
		b.Fatalf("fair dispatch left %d compress tasks in asynq's retry set", parked)
	}
}

// slowUpstream is instantUpstream answering each compression after delay.
func slowUpstream(tb testing.TB, result []byte, delay time.Duration) string {
	instant := instantUpstream(tb, result)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/api/validate" {
			time.Sleep(delay)
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, instant[:len(instant)-len("/api")]+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/api"
}

func floodPost(b *testing.B, url, key string, body []byte, want int) string {
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return ""
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		b.Errorf("POST %s: %d %s", url, res.StatusCode, data)
		return ""
	}
	var job struct{ ID string }
	json.Unmarshal(data, &job)
	return job.ID
}

func floodGet(b *testing.B, url, key string) []byte {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return data
}
