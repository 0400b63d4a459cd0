package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
)

// instantUpstream is a compression API that answers at once: it reads the
// upload and returns a fixed small result, so the benchmarks measure
// imgflow, not compression.
func instantUpstream(tb testing.TB, result []byte) string {
	answer, _ := json.Marshal(map[string]any{
		"success": true, "job_id": "00000000-0000-4000-8000-000000000000", "status": "completed",
		"message": "Image compressed successfully", "compressed_data": base64.StdEncoding.EncodeToString(result),
		"original_size": 1000, "compressed_size": len(result), "compression_ratio": 50.0, "credits_remaining": 1000,
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/validate" {
			io.WriteString(w, `{"valid":true,"user_id":"u","subscription_type":"Paid","credits_remaining":1000000,"max_image_size":10485760}`)
			return
		}
		w.Write(answer)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/api"
}

// benchSystem is serve + work wired as in production, against the instant
// upstream; it returns the API's URL.
func benchSystem(b *testing.B, r *redistest.Redis, concurrency int) string {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := httptest.NewUnstartedServer(nil)
	opts := appOptions{
		RedisURL: r.URL, UpstreamURL: instantUpstream(b, images.Read(b, "screenshot.png")),
		PublicURL: "http://" + api.Listener.Addr().String(), Secret: "bench-secret-0123456789",
		AllowPrivateURLs: true, ResultTTL: time.Hour, Queue: r.Queue(), keyPrefix: r.Prefix,
	}
	a, err := newApp(opts, r.Client)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	api.Config.Handler = a.apiServer(quiet, nil).Handler()
	api.Start()
	b.Cleanup(api.Close)
	w, err := a.worker(quiet, concurrency)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done; w.Close() })
	return opts.PublicURL
}

func postJob(b *testing.B, api, contentType string, body []byte) {
	req, _ := http.NewRequest("POST", api+"/v1/jobs?wait=25", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-API-Key", "sk_bench_key_0000")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"status":"completed"`)) {
		b.Errorf("job not completed: %d %s", res.StatusCode, out)
	}
}

// BenchmarkJobsEndToEnd is HTTP -> Redis -> worker -> upstream (answering at
// once) -> job completed, with 64 flows (32 × GOMAXPROCS) waiting on their
// jobs at once and a worker running 64 at a time.
func BenchmarkJobsEndToEnd(b *testing.B) {
	r := redistest.New(b)
	api := benchSystem(b, r, 64)
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png")) + `"}`)
	b.SetParallelism(32) // 32 × GOMAXPROCS clients
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			postJob(b, api, "application/json", body)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkBareAsynq is the floor: enqueue and a no-op handler on the same
// Redis, with the same worker concurrency and poll interval as imgflow's.
func BenchmarkBareAsynq(b *testing.B) {
	r := redistest.New(b)
	redisOpt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	all := make(chan struct{})
	var target atomic.Int64
	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency: 64, Queues: map[string]int{r.Queue(): 1}, TaskCheckInterval: 25 * time.Millisecond,
		LogLevel: asynq.ErrorLevel,
	})
	var once sync.Once
	mux := asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if handled.Add(1) == target.Load() {
			once.Do(func() { close(all) })
		}
		return nil
	})
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	client := asynq.NewClient(redisOpt)
	b.Cleanup(func() { client.Close() })
	target.Store(int64(b.N))
	start := time.Now()
	b.ResetTimer()
	var n atomic.Int64
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint(n.Add(1))
			if _, err := client.Enqueue(asynq.NewTask("noop", []byte(id)), asynq.Queue(r.Queue()), asynq.TaskID(id)); err != nil {
				b.Error(err)
			}
		}
	})
	select {
	case <-all:
	case <-time.After(time.Minute):
		b.Fatalf("handled %d of %d tasks", handled.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkTenMiBJobPeakHeap runs one upload job of a 10 MiB image at a time
// and reports the largest rise of live heap over the idle baseline while it
// runs (sampled every 200 µs), in MiB and as a multiple of the image size.
// Run it with REDIS_URL set: an embedded miniredis keeps its copies of the
// blobs in this process's heap.
func BenchmarkTenMiBJobPeakHeap(b *testing.B) {
	r := redistest.New(b)
	api := benchSystem(b, r, 4)
	image := make([]byte, 10<<20)
	copy(image, images.Read(b, "photo.png")) // a PNG header; the rest is zeros: only size matters here
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "big.png")
	fw.Write(image)
	mw.Close()
	body, ctype := form.Bytes(), mw.FormDataContentType()
	image = nil

	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	var worst uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		base := heap()
		stop := make(chan struct{})
		peakc := make(chan uint64)
		go func() {
			var peak uint64
			t := time.NewTicker(200 * time.Microsecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					peakc <- peak
					return
				case <-t.C:
					peak = max(peak, heap())
				}
			}
		}()
		postJob(b, api, ctype, body)
		close(stop)
		if extra := <-peakc; extra > base {
			worst = max(worst, extra-base)
		}
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-extra-MiB")
	b.ReportMetric(float64(worst)/float64(10<<20), "x-image")
}

// BenchmarkPickupLatencyEndToEnd measures, on an idle system, the time from
// POST /v1/jobs to the finished answer of ?wait (p50 and p99 in ms).
func BenchmarkPickupLatencyEndToEnd(b *testing.B) {
	r := redistest.New(b)
	api := benchSystem(b, r, 4)
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png")) + `"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		postJob(b, api, "application/json", body)
		lat = append(lat, time.Since(start))
		time.Sleep(100 * time.Millisecond) // idle between jobs: the worker is polling, not busy
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
