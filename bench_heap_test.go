package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/internal/redistest"
)

// The per-process 10 MiB heap benchmarks: serve and work each hold at
// most ~2.5 × the image at their peak, while
// BenchmarkTenMiBJobPeakHeap measures both in one process. Run them with
// REDIS_URL set (miniredis would keep the blobs in this heap).

// BenchmarkTenMiBServePeakHeap posts a 10 MiB image to the API with no
// worker running, so the job is only stored and queued: the peak is
// serve's alone. Each body form is sent with Content-Length and chunked.
func BenchmarkTenMiBServePeakHeap(b *testing.B) {
	image := tenMiBImage(b)
	upload, uploadType := uploadForm(image)
	forms := []struct {
		name, ctype string
		body        []byte
	}{
		{"upload", uploadType, upload},
		{"base64", "application/json", base64JSON(image, "")},
		{"datauri", "application/json", base64JSON(image, "data:image/png;base64,")},
	}
	image, upload = nil, nil
	for _, f := range forms {
		for _, withLength := range []bool{true, false} {
			b.Run(f.name+"/"+lengthName(withLength), func(b *testing.B) {
				api, _ := benchParts(b, redistest.New(b))
				peakHeapOf(b, func() { queueJob(b, api, f.ctype, f.body, withLength) })
			})
		}
	}
}

// BenchmarkTenMiBWorkPeakHeap is the worker's side: the job names a 10 MiB
// image URL on loopback (the API only stores the URL) and the compression
// API answers a 10 MiB compressed_data. With content-length both the image
// host and the compression API send Content-Length; chunked, neither does.
func BenchmarkTenMiBWorkPeakHeap(b *testing.B) {
	image := tenMiBImage(b)
	for _, withLength := range []bool{true, false} {
		b.Run("url/"+lengthName(withLength), func(b *testing.B) {
			host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "image/png")
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(len(image)))
				}
				w.Write(image)
			}))
			b.Cleanup(host.Close)
			api, startWorker := benchPartsUpstream(b, redistest.New(b), stubUpstream(b, image, withLength))
			startWorker(4)
			peakHeap(b, api, "application/json", []byte(`{"image_url":"`+host.URL+`/big.png"}`))
		})
	}
}

func lengthName(withLength bool) string {
	if withLength {
		return "content-length"
	}
	return "chunked"
}

// queueJob posts body to POST /v1/jobs without waiting and expects the job
// accepted; without withLength the body goes out chunked.
func queueJob(b *testing.B, api, contentType string, body []byte, withLength bool) {
	var rd io.Reader = bytes.NewReader(body)
	if !withLength {
		rd = struct{ io.Reader }{rd} // hides the length from net/http
	}
	status, out, err := sendJob(api+"/v1/jobs", contentType, rd)
	if err != nil {
		b.Error(err)
	} else if status != http.StatusAccepted {
		b.Errorf("job not accepted: %d %s", status, out)
	}
}

// BenchmarkTenMiBResultPeakHeap is serve's side of handing a 10 MiB result
// back inline: GET /v1/jobs/{id}?include=data, the compressed bytes as
// base64 in the JSON answer (13.3 MiB). The job is run once beforehand by a
// worker in this process, which is idle while the GETs are measured.
func BenchmarkTenMiBResultPeakHeap(b *testing.B) {
	image := tenMiBImage(b)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(image)
	}))
	b.Cleanup(host.Close)
	api, startWorker := benchPartsUpstream(b, redistest.New(b), stubUpstream(b, image, true))
	startWorker(1)
	status, out, err := sendJob(api+"/v1/jobs?wait=25", "application/json", strings.NewReader(`{"image_url":"`+host.URL+`/big.png"}`))
	var job struct{ ID, Status string }
	if err != nil || status != http.StatusOK || json.Unmarshal(out, &job) != nil || job.Status != "completed" {
		b.Fatalf("job not completed: %d %v %.200s", status, err, out)
	}
	peakHeapOf(b, func() {
		req, _ := http.NewRequest("GET", api+"/v1/jobs/"+job.ID+"?include=data", nil)
		req.Header.Set("X-API-Key", "sk_bench_key_0000")
		res, err := benchClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body) // read as it comes: the client holds nothing
		res.Body.Close()
		if res.StatusCode != http.StatusOK || n < 10<<20*4/3 {
			b.Errorf("answer %d of %d bytes, want 200 with the base64 of 10 MiB", res.StatusCode, n)
		}
	})
}
