package worker

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/internal/redistest"
)

// benchServer runs an asynq server configured like Worker.Run, with
// handler, on the benchmark's Redis and queue.
func benchServer(b *testing.B, handler asynq.HandlerFunc) (*asynq.Client, string) {
	b.Helper()
	r := redistest.New(b)
	opt, err := asynq.ParseRedisURI(r.URL)
	if err != nil {
		b.Fatal(err)
	}
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:       10,
		Queues:            map[string]int{r.Queue(): 1},
		TaskCheckInterval: 25 * time.Millisecond, // Config's default
		Logger:            asynqLogger{testLogger()},
		LogLevel:          asynq.ErrorLevel,
	})
	if err := srv.Start(handler); err != nil {
		b.Fatal(err)
	}
	client := asynq.NewClient(opt)
	b.Cleanup(func() {
		srv.Shutdown()
		client.Close()
	})
	return client, r.Queue()
}

// BenchmarkQueueThroughput enqueues b.N tasks from 8 goroutines to a
// server with a no-op handler and reports tasks/s end to end (enqueue,
// dequeue, mark done): the ceiling asynq and this Redis put on jobs/s.
func BenchmarkQueueThroughput(b *testing.B) {
	var done atomic.Int64
	all := make(chan struct{})
	var n int64
	client, queue := benchServer(b, func(context.Context, *asynq.Task) error {
		if done.Add(1) == n {
			close(all)
		}
		return nil
	})
	n = int64(b.N)
	payload := []byte(`{"job_id":"0190a0a0-0000-7000-8000-000000000000"}`)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= n {
				if _, err := client.Enqueue(asynq.NewTask("noop", payload), asynq.Queue(queue)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		b.Fatalf("expected %d tasks handled within 60s, got %d", n, done.Load())
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "tasks/s")
}

// BenchmarkPickupLatency enqueues one task at a time to an idle server and
// reports how long each waited before its handler ran (p50, p99 in ms):
// mostly the idle poll (TaskCheckInterval/2 plus up to TaskCheckInterval of
// jitter: 12.5–37.5 ms at the default 25 ms), as asynq polls an empty queue.
func BenchmarkPickupLatency(b *testing.B) {
	got := make(chan time.Duration, 1)
	client, queue := benchServer(b, func(_ context.Context, t *asynq.Task) error {
		sent := int64(binary.BigEndian.Uint64(t.Payload()))
		got <- time.Duration(time.Now().UnixNano() - sent)
		return nil
	})
	time.Sleep(100 * time.Millisecond) // let the server settle into idle polling
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		// Enqueue only once the server has found the queue empty and gone
		// to sleep, at a random point of its polling cycle: back-to-back
		// probes would often catch it right after a task, when it polls at
		// once, and flatter the figure.
		b.StopTimer()
		time.Sleep(40*time.Millisecond + rand.N(25*time.Millisecond))
		b.StartTimer()
		payload := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
		if _, err := client.Enqueue(asynq.NewTask("probe", payload), asynq.Queue(queue)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, <-got)
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 {
		return float64(lat[min(int(q*float64(len(lat))), len(lat)-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
