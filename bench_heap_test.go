package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/imgflow/imgflow/internal/redistest"
)

// The per-process 10 MiB heap benchmarks: issue 16 asks that serve and
// work each hold at most ~2.5 × the image at their peak, while
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
