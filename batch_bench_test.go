package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
)

// Batches' targets, figures in BENCHMARK.md:
//
//	REDIS_URL=redis://127.0.0.1:6379 go test -run '^$' -bench 'Batch' -benchtime 2x .

// urlItems is a batch body of n image_url items served by samples.
func urlItems(samples string, n int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"image_url":"%s/screenshot.png?i=%d"}`, samples, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func samplesServer(b *testing.B) string {
	srv := httptest.NewServer(http.FileServer(http.Dir(images.Path(""))))
	b.Cleanup(srv.Close)
	return srv.URL
}

func benchRequest(method, url string, body []byte) (int, []byte, error) {
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", "sk_bench_key_0000")
	res, err := benchClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// BenchmarkBatchCreate1000URLs is POST /v1/batches with 1,000 URL items
// on an idle system (no worker: the items stay queued); p50 and p99 ms.
func BenchmarkBatchCreate1000URLs(b *testing.B) {
	r := redistest.New(b)
	api, _ := benchParts(b, r)
	body := urlItems("http://127.0.0.1:9", 1000)
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		st, out, err := benchRequest("POST", api+"/v1/batches", body)
		took = append(took, time.Since(start))
		if err != nil || st != http.StatusAccepted {
			b.Fatalf("%d %v %.200s", st, err, out)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkBatchVersusSingleJobs is 1,000 URL images as one batch against
// the same 1,000 as single jobs (64 flows waiting on theirs), on one
// system with the instant upstream and a worker of concurrency 64;
// batch-ratio is the batch's throughput over the singles'.
func BenchmarkBatchVersusSingleJobs(b *testing.B) {
	r := redistest.New(b)
	api := benchSystem(b, r, 64)
	samples := samplesServer(b)
	const n = 1000
	var singles, batches time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var wg sync.WaitGroup
		next := make(chan int, n)
		for i := range n {
			next <- i
		}
		close(next)
		for range 64 {
			wg.Go(func() {
				for i := range next {
					st, out, err := benchRequest("POST", api+"/v1/jobs?wait=25",
						[]byte(fmt.Sprintf(`{"image_url":"%s/screenshot.png?s=%d"}`, samples, i)))
					if err != nil || st != http.StatusOK {
						b.Errorf("single job: %d %v %.200s", st, err, out)
					}
				}
			})
		}
		wg.Wait()
		singles += time.Since(start)

		start = time.Now()
		st, out, err := benchRequest("POST", api+"/v1/batches", urlItems(samples, n))
		if err != nil || st != http.StatusAccepted {
			b.Fatalf("batch: %d %v %.200s", st, err, out)
		}
		var batch struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Counts struct{ Completed int }
		}
		json.Unmarshal(out, &batch)
		for batch.Status != "finished" {
			time.Sleep(5 * time.Millisecond)
			_, out, _ = benchRequest("GET", api+"/v1/batches/"+batch.ID, nil)
			json.Unmarshal(out, &batch)
		}
		batches += time.Since(start)
		if batch.Counts.Completed != n {
			b.Fatalf("batch: %s", out)
		}
	}
	b.ReportMetric(float64(n*b.N)/singles.Seconds(), "single-jobs/s")
	b.ReportMetric(float64(n*b.N)/batches.Seconds(), "batch-items/s")
	b.ReportMetric(singles.Seconds()/batches.Seconds(), "batch-ratio")
}

// BenchmarkBatchArchivePeakHeap streams the archive of a finished batch
// of 1,000 results, of 128 KiB and of 1 MiB each, and reports the largest
// rise of heap while it streams: peak-extra-MiB counts every object (the
// garbage not yet collected too), live-MiB what the last collection found
// reachable, and x-largest is live-MiB over the largest file (target ≤ 2).
// What the archive holds is one chunk of the file being copied (at most
// 1 MiB), a page of records and archive/zip's directory, about 300 bytes
// per entry: for small files the entries, not the files, set the peak.
func BenchmarkBatchArchivePeakHeap(b *testing.B) {
	for _, size := range []int{128 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("file=%dKiB", size>>10), func(b *testing.B) { benchArchivePeakHeap(b, size) })
	}
}

func benchArchivePeakHeap(b *testing.B, size int) {
	result := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, size-8)...)
	r := redistest.New(b)
	api, startWorker := benchPartsUpstream(b, r, stubUpstream(b, result, true))
	startWorker(64)
	samples := samplesServer(b)
	st, out, err := benchRequest("POST", api+"/v1/batches", urlItems(samples, 1000))
	if err != nil || st != http.StatusAccepted {
		b.Fatalf("batch: %d %v %.200s", st, err, out)
	}
	var batch struct {
		ID, Status string
		Counts     struct{ Completed int }
	}
	json.Unmarshal(out, &batch)
	for batch.Status != "finished" {
		time.Sleep(20 * time.Millisecond)
		_, out, _ = benchRequest("GET", api+"/v1/batches/"+batch.ID, nil)
		json.Unmarshal(out, &batch)
	}
	if batch.Counts.Completed != 1000 {
		b.Fatalf("batch: %s", out)
	}
	var n int64
	// Each file's chunk is dropped once copied: with the default GOGC that
	// garbage, not what the stream holds, would set peak-extra-MiB.
	// Collecting often makes both figures close to what is held.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	live := heapRise("/gc/heap/live:bytes")
	peakHeapOf(b, func() {
		req, _ := http.NewRequest("GET", api+"/v1/batches/"+batch.ID+"/archive", nil)
		req.Header.Set("X-API-Key", "sk_bench_key_0000")
		res, err := benchClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	})
	b.StopTimer()
	rise := live()
	b.ReportMetric(float64(rise)/(1<<20), "live-MiB")
	b.ReportMetric(float64(rise)/float64(size), "x-largest")
	if n < int64(1000*size) {
		b.Fatalf("archive of %d bytes; want 1,000 files of %d", n, size)
	}
}
