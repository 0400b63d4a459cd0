package main

import (
	"bytes"
	"context"
	"image/jpeg"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images/synth"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
)

// BenchmarkSetOfFiveVersusOneJob is a responsive set against one job, each
// as a flow sees it: a 24 MP JPEG posted as the raw body with ?wait, through
// serve, work (concurrency 8) and the reference compression API over real
// HTTP (it really compresses), to the finished answer. one-job resizes to
// 1600 wide; set-of-5 makes 320, 640, 960, 1280 and 1600 wide from one
// fetch and one decode, five calls of the API. The target is a set
// within 1.5× one job's wall time; benchstat the two rows:
//
//	go test -run '^$' -bench SetOfFiveVersusOneJob -benchtime 3x -count 6 . | tee /tmp/s.txt; benchstat /tmp/s.txt
func BenchmarkSetOfFiveVersusOneJob(b *testing.B) {
	if err := imaging.Available(); err != nil {
		b.Skipf("libvips not available: %v", err)
	}
	r := redistest.New(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ledger := refupstream.NewLedger(r.Client, r.Prefix+"up:", nil)
	up := httptest.NewServer(refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: quiet}))
	b.Cleanup(up.Close)
	key, _, err := ledger.CreateAccount(context.Background(), 1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	api, startWorker := benchPartsUpstream(b, r, up.URL+"/api")
	startWorker(8)
	var photo bytes.Buffer
	if err := jpeg.Encode(&photo, synth.Photo(7, 6000, 4000), &jpeg.Options{Quality: 85}); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration // each op's wall time
	post := func(b *testing.B, path, done string) {
		defer func(start time.Time) { took = append(took, time.Since(start)) }(time.Now())
		req, _ := http.NewRequest(http.MethodPost, api+path, bytes.NewReader(photo.Bytes()))
		req.Header.Set("Content-Type", "image/jpeg")
		req.Header.Set("X-API-Key", key)
		res, err := benchClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(done)) {
			b.Fatalf("%s: %d %.300s", path, res.StatusCode, out)
		}
	}
	b.Logf("source: 6000×4000 JPEG, %d bytes", photo.Len())
	// cpu-s/op is the process's CPU time per op: serve, work and the
	// reference API all run in it; min-s/op the quickest op, what a
	// shared machine's other load spares best.
	measure := func(b *testing.B, path, done string) {
		took = took[:0]
		cpu0 := cpuTime(b)
		for b.Loop() {
			post(b, path, done)
		}
		b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		b.ReportMetric(slices.Min(took).Seconds(), "min-s/op")
	}
	b.Run("one-job", func(b *testing.B) {
		measure(b, "/v1/jobs?wait=25&resize=1600x", `"status":"completed"`)
	})
	b.Run("set-of-5", func(b *testing.B) {
		measure(b, "/v1/jobs/variants?wait=25&variants=w320=320w,w640=640w,w960=960w,w1280=1280w,w1600=1600w", `"status":"finished"`)
	})
}
