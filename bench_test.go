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
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/system"
)

// instantUpstream is a compression API that answers at once: it reads the
// upload and returns a fixed small result, so the benchmarks measure
// imgflow, not compression.
func instantUpstream(tb testing.TB, result []byte) string {
	return stubUpstream(tb, result, false)
}

// stubUpstream is instantUpstream with the answer's Content-Length set
// (withLength) or left out, when an answer this large goes out chunked.
func stubUpstream(tb testing.TB, result []byte, withLength bool) string {
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
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		}
		w.Write(answer)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/api"
}

// benchSystem is serve + work wired as in production, against the instant
// upstream; it returns the API's URL.
func benchSystem(b *testing.B, r *redistest.Redis, concurrency int, configure ...func(*system.Options)) string {
	api, startWorker := benchParts(b, r, configure...)
	startWorker(concurrency)
	return api
}

// benchParts starts the API (serve) and returns its URL and a function that
// starts the worker (work) beside it, so a benchmark can queue jobs first.
func benchParts(b *testing.B, r *redistest.Redis, configure ...func(*system.Options)) (string, func(concurrency int)) {
	return benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")), configure...)
}

// onAsynq pins asynq dispatch (IMGFLOW_DISPATCH=asynq, the opt-out): the
// rows named without -fair measure it, whatever the default, so their
// figures and .ci/perf.sh's ceilings keep meaning the same path.
func onAsynq(o *system.Options) { o.Dispatch = "asynq" }

// benchPartsUpstream is benchParts against the compression API at upstreamURL.
//
// Content dedupe is off unless configure turns it on: the benchmarks post
// one image again and again, and with dedupe every job after the first
// would complete from the first one's result instead of being compressed
// (BenchmarkRedisCommandsPerJob's dedupe rows measure that path).
func benchPartsUpstream(b *testing.B, r *redistest.Redis, upstreamURL string, configure ...func(*system.Options)) (string, func(concurrency int)) {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := httptest.NewUnstartedServer(nil)
	opts := system.Options{
		RedisURL: r.URL, UpstreamURL: upstreamURL,
		PublicURL: "http://" + api.Listener.Addr().String(), Secret: "bench-secret-0123456789",
		AllowLoopback: true, ResultTTL: time.Hour, Queue: r.Queue(), KeyPrefix: r.Prefix, Dedupe: "off",
	}
	for _, c := range configure {
		c(&opts)
	}
	a, err := system.New(opts, r.Client)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	api.Config.Handler = a.APIServer(quiet, nil).Handler()
	api.Start()
	b.Cleanup(api.Close)
	return opts.PublicURL, func(concurrency int) {
		w, err := a.Worker(quiet, concurrency)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		b.Cleanup(func() { cancel(); <-done; w.Close() })
	}
}

// benchClient keeps a connection per flow open, as the platforms' HTTP
// clients do; Go's default of 2 idle connections per host would make the
// benchmark measure TCP set-up and TIME_WAIT instead of imgflow.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func postJob(b *testing.B, api, contentType string, body []byte) {
	status, out, err := sendJob(api+"/v1/jobs?wait=25", contentType, bytes.NewReader(body))
	if err != nil {
		b.Error(err)
	} else if status != http.StatusOK || !bytes.Contains(out, []byte(`"status":"completed"`)) {
		b.Errorf("job not completed: %d %s", status, out)
	}
}

// sendJob posts body to url as the bench key and returns the answer.
func sendJob(url, contentType string, body io.Reader) (int, []byte, error) {
	req, _ := http.NewRequest("POST", url, body)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-API-Key", "sk_bench_key_0000")
	res, err := benchClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// BenchmarkJobsEndToEnd is HTTP -> Redis -> worker -> upstream (answering
// at once) -> job completed, with 64 flows (32 × GOMAXPROCS) waiting on
// their jobs at once and a worker running 64 at a time, on the default
// dispatch (fair); BenchmarkJobsEndToEndAsynq on asynq's.
func BenchmarkJobsEndToEnd(b *testing.B)      { benchJobsEndToEnd(b) }
func BenchmarkJobsEndToEndAsynq(b *testing.B) { benchJobsEndToEnd(b, onAsynq) }

func benchJobsEndToEnd(b *testing.B, configure ...func(*system.Options)) {
	r := redistest.New(b)
	api := benchSystem(b, r, 64, configure...)
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
func BenchmarkBareAsynq(b *testing.B) { benchBareAsynq(b, 1) }

// BenchmarkBareAsynqFourServers is the floor with the slots shared by four
// asynq servers, as imgflow's worker shares its 64 (worker.Config.Fetchers):
// what the same split does for bare asynq.
func BenchmarkBareAsynqFourServers(b *testing.B) { benchBareAsynq(b, 4) }

func benchBareAsynq(b *testing.B, servers int) {
	r := redistest.New(b)
	redisOpt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	all := make(chan struct{})
	var target atomic.Int64
	var once sync.Once
	mux := asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if handled.Add(1) == target.Load() {
			once.Do(func() { close(all) })
		}
		return nil
	})
	for range servers {
		srv := asynq.NewServer(redisOpt, asynq.Config{
			Concurrency: 64 / servers, Queues: map[string]int{r.Queue(): 1}, TaskCheckInterval: 25 * time.Millisecond,
			LogLevel: asynq.ErrorLevel,
		})
		if err := srv.Start(mux); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(srv.Shutdown)
	}
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
	body, ctype := uploadForm(tenMiBImage(b))
	peakHeap(b, api, ctype, body)
}

// tenMiBImage is a PNG header followed by zeros, 10 MiB in all: only its
// size matters to the heap benchmarks.
func tenMiBImage(tb testing.TB) []byte {
	image := make([]byte, 10<<20)
	copy(image, images.Read(tb, "photo.png"))
	return image
}

// uploadForm is image as the multipart upload of POST /v1/jobs.
func uploadForm(image []byte) (body []byte, contentType string) {
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "big.png")
	fw.Write(image)
	mw.Close()
	return form.Bytes(), mw.FormDataContentType()
}

// base64JSON is image as the JSON body of POST /v1/jobs, in image_base64
// after prefix ("" or a data: URI's "data:image/png;base64,").
func base64JSON(image []byte, prefix string) []byte {
	return []byte(`{"image_base64":"` + prefix + base64.StdEncoding.EncodeToString(image) + `"}`)
}

// BenchmarkTenMiBBase64JobPeakHeap is the same job sent as JSON with the
// image in image_base64 (a data: URI), a path whose text could easily be
// held two or three times over.
func BenchmarkTenMiBBase64JobPeakHeap(b *testing.B) {
	r := redistest.New(b)
	api := benchSystem(b, r, 4)
	peakHeap(b, api, "application/json", base64JSON(tenMiBImage(b), "data:image/png;base64,"))
}

// peakHeap posts body b.N times, one job at a time, and reports the
// largest rise of live heap over the idle baseline (serve and work in this
// one process), in MiB and in multiples of a 10 MiB image.
func peakHeap(b *testing.B, api, ctype string, body []byte) {
	peakHeapOf(b, func() { postJob(b, api, ctype, body) })
}

// peakHeapOf runs run b.N times and reports the largest rise of live heap
// over the idle baseline (after a GC) while each run lasts.
func peakHeapOf(b *testing.B, run func()) {
	var worst uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rise := heapRise("/memory/classes/heap/objects:bytes")
		run()
		worst = max(worst, rise())
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-extra-MiB")
	b.ReportMetric(float64(worst)/float64(10<<20), "x-image")
}

// heapRise collects garbage, then samples the runtime metric name (a heap
// size in bytes) every 200 µs until the returned function is called, which
// returns the largest rise over the value after that collection.
func heapRise(name string) func() uint64 {
	sample := []metrics.Sample{{Name: name}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	stop, peakc := make(chan struct{}), make(chan uint64)
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
				peak = max(peak, read())
			}
		}
	}()
	return func() uint64 {
		close(stop)
		if peak := <-peakc; peak > base {
			return peak - base
		}
		return 0
	}
}

// BenchmarkPickupLatencyEndToEnd measures, on an idle system and the
// default dispatch (fair), the time from POST /v1/jobs to the finished
// answer of ?wait (p50 and p99 in ms); BenchmarkPickupLatencyEndToEndAsynq
// on asynq's.
func BenchmarkPickupLatencyEndToEnd(b *testing.B)      { benchPickupLatency(b) }
func BenchmarkPickupLatencyEndToEndAsynq(b *testing.B) { benchPickupLatency(b, onAsynq) }

func benchPickupLatency(b *testing.B, configure ...func(*system.Options)) {
	r := redistest.New(b)
	api := benchSystem(b, r, 4, configure...)
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png")) + `"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		postJob(b, api, "application/json", body)
		lat = append(lat, time.Since(start))
		time.Sleep(100 * time.Millisecond) // idle between jobs: the worker is waiting, not busy
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
