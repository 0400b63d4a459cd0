package main

import (
	"encoding/base64"
	"sort"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/system"
)

// The end-to-end benchmarks on fair dispatch (IMGFLOW_DISPATCH=fair), to
// run beside their asynq twins in one run:
//
//	go test -run '^$' -bench 'JobsEndToEnd(Fair)?$|PickupLatencyEndToEnd(Fair)?$' -count 3 .

// benchFairSystem is benchSystem with fair dispatch.
func benchFairSystem(b *testing.B, r *redistest.Redis, concurrency int) string {
	api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")),
		func(o *system.Options) { o.Dispatch = "fair" })
	startWorker(concurrency)
	return api
}

// BenchmarkJobsEndToEndFair is BenchmarkJobsEndToEnd on fair dispatch.
func BenchmarkJobsEndToEndFair(b *testing.B) {
	r := redistest.New(b)
	api := benchFairSystem(b, r, 64)
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png")) + `"}`)
	b.SetParallelism(32)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			postJob(b, api, "application/json", body)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkPickupLatencyEndToEndFair is BenchmarkPickupLatencyEndToEnd on
// fair dispatch.
func BenchmarkPickupLatencyEndToEndFair(b *testing.B) {
	r := redistest.New(b)
	api := benchFairSystem(b, r, 4)
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png")) + `"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		postJob(b, api, "application/json", body)
		lat = append(lat, time.Since(start))
		time.Sleep(100 * time.Millisecond)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRedisCommandsIdleFair is BenchmarkRedisCommandsIdle on fair
// dispatch: what an idle serve + work pair costs Redis per second.
func BenchmarkRedisCommandsIdleFair(b *testing.B) {
	benchIdleCost(b, func(o *system.Options) { o.Dispatch = "fair" })
}
