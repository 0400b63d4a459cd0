package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/redistest"
)

// BenchmarkDispatchAtScale is #46's "at scale" on the queue alone (no
// HTTP, no store): SCALE_JOBS jobs (default 100,000) of one key are queued
// at once, then 16 slots of one worker process drain them, each job
// holding its slot for 1 ms, while a quiet key queues a job every 20 ms.
// Rows: fair dispatch, and asynq's queue with nothing in the way
// (fairness off). Reported: the flood's drain time and rate, and the quiet
// key's pickup (its enqueue to its handler) at p50 and p99.
//
//	REDIS_URL=redis://127.0.0.1:PORT/0 go test -run '^$' -bench DispatchAtScale -benchtime 1x ./worker/
//
// The weights row gives three keys weights 1:2:4, each with a backlog,
// runs the slots for SCALE_SECONDS (default 3) and reports each key's
// share against its weight's (it fails beyond ±5 %).
func BenchmarkDispatchAtScale(b *testing.B) {
	jobs := envInt("SCALE_JOBS", 100_000)
	b.Run("fair", func(b *testing.B) {
		for range b.N {
			floodAtScale(b, jobs, true)
		}
	})
	b.Run("asynq-fairness-off", func(b *testing.B) {
		for range b.N {
			floodAtScale(b, jobs, false)
		}
	})
	b.Run("fair-weights-1:2:4", func(b *testing.B) {
		for range b.N {
			weightedShares(b, time.Duration(envInt("SCALE_SECONDS", 3))*time.Second)
		}
	})
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

const (
	scaleSlots = 16
	scaleWork  = time.Millisecond
)

// scaleHandler holds a slot for scaleWork, counts the jobs of each key
// and notes when each job started.
type scaleHandler struct {
	mu      sync.Mutex
	started map[string]time.Time
	perKey  map[string]int
	total   atomic.Int64
}

func newScaleHandler() *scaleHandler {
	return &scaleHandler{started: map[string]time.Time{}, perKey: map[string]int{}}
}

func (h *scaleHandler) handle(_ context.Context, t *asynq.Task) error {
	var p compressPayload
	json.Unmarshal(t.Payload(), &p)
	now := time.Now()
	h.mu.Lock()
	h.perKey[p.Owner]++
	if p.Owner == "quiet" {
		h.started[p.JobID] = now
	}
	h.mu.Unlock()
	h.total.Add(1)
	time.Sleep(scaleWork)
	return nil
}

// startFair runs a fair runner of scaleSlots slots on q until the
// returned stop is called.
func startFair(b *testing.B, q *fairQueue, rdb redis.UniversalClient, h *scaleHandler) (stop func()) {
	r := newFairRunner(q, scaleSlots, time.Second)
	r.handle, r.retryAt, r.maxRetry = h.handle, func(int) time.Duration { return time.Second }, 3
	r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.listen(ctx, rdb) })
	wg.Go(func() { r.run(ctx, 5*time.Second) })
	return func() { cancel(); wg.Wait() }
}

// fairFlood queues n jobs of owner on q in pipelines of 1,000.
func fairFlood(b *testing.B, q *fairQueue, owner string, n int) {
	ctx := context.Background()
	if err := q.enqueue(ctx, owner+"-0", owner); err != nil { // loads the script
		b.Fatal(err)
	}
	for from := 1; from < n; from += 1000 {
		p := q.rdb.Pipeline()
		for i := from; i < min(from+1000, n); i++ {
			enqueueScript.EvalSha(ctx, p, []string{q.ready(owner), q.key("ring"), q.key("known"), q.key("state")},
				owner+"-"+strconv.Itoa(i), owner, q.channel, q.limit)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func floodAtScale(b *testing.B, n int, fair bool) {
	r := redistest.New(b)
	if r.Mini != nil {
		b.Skip("set REDIS_URL: a flood of this size is for a real Redis")
	}
	ctx := context.Background()
	h := newScaleHandler()
	var enqueueQuiet func(id string)
	var stop func()
	if fair {
		q := newFairQueue(r.Client, r.Queue(), 0)
		fairFlood(b, q, "flood", n)
		enqueueQuiet = func(id string) {
			if err := q.enqueue(ctx, id, "quiet"); err != nil {
				b.Error(err)
			}
		}
		b.ResetTimer()
		stop = startFair(b, q, r.Client, h)
	} else {
		client := asynq.NewClientFromRedisClient(r.Client)
		enqueue := func(id, owner string) error {
			payload, _ := json.Marshal(compressPayload{JobID: id, Owner: owner})
			_, err := client.Enqueue(asynq.NewTask(TypeCompress, payload), asynq.Queue(r.Queue()), asynq.MaxRetry(3))
			return err
		}
		for i := range n {
			if err := enqueue("flood-"+strconv.Itoa(i), "flood"); err != nil {
				b.Fatal(err)
			}
		}
		enqueueQuiet = func(id string) {
			if err := enqueue(id, "quiet"); err != nil {
				b.Error(err)
			}
		}
		srv := asynq.NewServerFromRedisClient(r.Client, asynq.Config{
			Concurrency: scaleSlots, Queues: map[string]int{r.Queue(): 1},
			LogLevel: asynq.ErrorLevel,
		})
		mux := asynq.NewServeMux()
		mux.HandleFunc(TypeCompress, h.handle)
		b.ResetTimer()
		if err := srv.Start(mux); err != nil {
			b.Fatal(err)
		}
		stop = srv.Shutdown
	}
	start := time.Now()
	queued := map[string]time.Time{}
	for i := 0; ; i++ {
		// A quiet job every 20 ms while the flood drains; its pickups are
		// read once it is over.
		id := "quiet-" + strconv.Itoa(i)
		queued[id] = time.Now()
		enqueueQuiet(id)
		time.Sleep(20 * time.Millisecond)
		h.mu.Lock()
		floodDone := h.perKey["flood"]
		h.mu.Unlock()
		if floodDone >= n {
			break
		}
	}
	drain := time.Since(start)
	// The quiet jobs queued last get their turn after the flood: wait
	// for them (asynq's FIFO has them last).
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		got := len(h.started)
		h.mu.Unlock()
		if got == len(queued) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	b.StopTimer()
	h.mu.Lock()
	defer h.mu.Unlock()
	var pickups []time.Duration
	for id, at := range queued {
		if s, ok := h.started[id]; ok {
			pickups = append(pickups, s.Sub(at))
		}
	}
	if len(pickups) != len(queued) {
		b.Errorf("%d of %d quiet jobs never ran", len(queued)-len(pickups), len(queued))
	}
	if len(pickups) == 0 {
		return
	}
	slices.Sort(pickups)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(drain.Seconds(), "drain-s")
	b.ReportMetric(float64(n)/drain.Seconds(), "flood-jobs/s")
	b.ReportMetric(ms(pickups[len(pickups)/2]), "quiet-p50-ms")
	b.ReportMetric(ms(pickups[len(pickups)*99/100]), "quiet-p99-ms")
	b.ReportMetric(float64(len(pickups)), "quiet-jobs")
}

func weightedShares(b *testing.B, run time.Duration) {
	r := redistest.New(b)
	if r.Mini != nil {
		b.Skip("set REDIS_URL: saturation is measured on a real Redis")
	}
	ctx := context.Background()
	q := newFairQueue(r.Client, r.Queue(), 0)
	weights := map[string]float64{"w1": 1, "w2": 2, "w4": 4}
	// Backlogs larger than the run can drain: every key waits throughout.
	backlog := int(run.Seconds()) * 20_000
	for owner, w := range weights {
		if err := q.setKeyTurns(ctx, owner, w, 0); err != nil {
			b.Fatal(err)
		}
		fairFlood(b, q, owner, backlog)
	}
	h := newScaleHandler()
	b.ResetTimer()
	stop := startFair(b, q, r.Client, h)
	time.Sleep(run)
	stop()
	b.StopTimer()
	h.mu.Lock()
	defer h.mu.Unlock()
	total := 0
	for owner := range weights {
		total += h.perKey[owner]
	}
	if total == 0 {
		b.Fatal("no job ran")
	}
	for owner, w := range weights {
		if h.perKey[owner] >= backlog {
			b.Fatalf("key %s ran out of work: the shares are not under saturation", owner)
		}
		want := w / 7
		got := float64(h.perKey[owner]) / float64(total)
		b.ReportMetric(100*got, owner+"-share-%")
		if dev := (got - want) / want; dev < -0.05 || dev > 0.05 {
			b.Errorf("key %s (weight %g) got %.1f%% of %d jobs, want %.1f%% ±5%%", owner, w, 100*got, total, 100*want)
		}
	}
	b.ReportMetric(float64(total)/run.Seconds(), "jobs/s")
}
