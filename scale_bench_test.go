package main

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/asynqext"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/s3test"
	"github.com/imgflow/imgflow/internal/system"
)

// BenchmarkRedisBytesPerFinishedJob measures what a finished job leaves in
// Redis (used_memory after minus before, over b.N jobs), with image bytes
// in Redis and in S3, for the capacity plan in docs/costs.md; and the
// CPU time serve + work (this process: user + system) spend per job, one
// flow at a time. Each job
// uploads photo.jpg (25 KiB) as base64 and gets photo.png (127 KiB) back
// from an instant upstream, so the result blob is easy to tell from the
// rest. Needs a real Redis of its own (REDIS_URL; miniredis has no INFO);
// the s3 case needs versitygw. Run:
//
//	REDIS_URL=redis://127.0.0.1:PORT/0 go test -run '^$' -bench RedisBytesPerFinishedJob -benchtime 500x .
func BenchmarkRedisBytesPerFinishedJob(b *testing.B) {
	for _, store := range []string{"redis", "s3"} {
		b.Run("blobs="+store, func(b *testing.B) {
			r := redistest.New(b)
			if r.Mini != nil {
				b.Skip("needs a real Redis (REDIS_URL): miniredis reports no memory")
			}
			opts := system.Options{}
			if store == "s3" {
				srv := s3test.New(b)
				b.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
				b.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
				opts.BlobStore = srv.URL()
			}
			api := memorySystem(b, r, opts)
			body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "photo.jpg")) + `"}`)
			postJob(b, api, "application/json", body) // warm up: pools, scripts, the account cache
			before := usedMemory(b, r)
			cpuBefore := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				postJob(b, api, "application/json", body)
			}
			b.StopTimer()
			cpu := cpuTime(b) - cpuBefore
			time.Sleep(200 * time.Millisecond) // the last input deletes and task moves settle
			after := usedMemory(b, r)
			b.ReportMetric(float64(after-before)/float64(b.N), "redis-B/job")
			logKeyKinds(b, r, b.N+1)
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/job")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// memorySystem is serve + work in one process on r, with the instant
// upstream answering photo.png.
func memorySystem(b *testing.B, r *redistest.Redis, opts system.Options) string {
	b.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := httptest.NewUnstartedServer(nil)
	opts.RedisURL, opts.UpstreamURL = r.URL, instantUpstream(b, images.Read(b, "photo.png"))
	opts.PublicURL, opts.Secret = "http://"+api.Listener.Addr().String(), "bench-secret-0123456789"
	opts.AllowLoopback, opts.ResultTTL, opts.Queue, opts.KeyPrefix = true, time.Hour, r.Queue(), r.Prefix
	a, err := system.New(opts, r.Client)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	api.Config.Handler = a.APIServer(quiet, nil).Handler()
	api.Start()
	b.Cleanup(api.Close)
	w, err := a.Worker(quiet, 4)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done; w.Close() })
	return opts.PublicURL
}

func usedMemory(b *testing.B, r *redistest.Redis) int64 {
	b.Helper()
	info, err := r.Client.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("INFO memory has no used_memory")
	return 0
}

var uuidLike = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}|\{[0-9]+\}`)

// logKeyKinds logs MEMORY USAGE per job summed by kind of key (ids
// replaced), for the breakdown in the capacity plan.
func logKeyKinds(b *testing.B, r *redistest.Redis, jobs int) {
	ctx := context.Background()
	sums := map[string]int64{}
	for _, pattern := range []string{r.Prefix + "*", asynqext.QueueOf(r.Queue()).KeyPattern()} {
		iter := r.Client.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			n, _ := r.Client.MemoryUsage(ctx, iter.Val()).Result()
			sums[uuidLike.ReplaceAllString(strings.TrimPrefix(iter.Val(), r.Prefix), "ID")] += n
		}
	}
	kinds := slices.Sorted(maps.Keys(sums))
	for _, k := range kinds {
		b.Logf("%-40s %8d B/job", k, sums[k]/int64(jobs))
	}
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
