package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// fairRunner runs a process's compress jobs from fair dispatch
// (dispatch.go): one loop fills every free slot with one dispatch whenever
// a key has ready work, each job runs in a goroutine of its own, and a
// heartbeat renews the leases of the jobs running here. An idle loop waits
// for a wake-up (an enqueue's PUBLISH) or IdleWait, as asynq's held
// dequeue does (wake.go), so an idle worker costs Redis one dispatch per
// IdleWait.
type fairRunner struct {
	q        *fairQueue
	handle   func(ctx context.Context, t *asynq.Task) error
	retryAt  func(retried int) time.Duration // the delay before retry number retried+1
	maxRetry int
	slots    int
	idleWait time.Duration
	lease    time.Duration // a dispatched job's lease (fairLease; tests shorten it)
	log      *slog.Logger

	signal chan struct{} // a wake-up arrived (capacity 1)
	mu     sync.Mutex
	held   map[string]*fairJob // the jobs running here, by lease member
	// stopping: the shutdown grace is up and the jobs' contexts are
	// cancelled; a run that ends in error then is given back, not retried.
	stopping atomic.Bool
}

// fairStopWait is how long, after the shutdown grace, a worker waits for
// its cancelled jobs to stop: those that do are given back at once; the
// rest keep running to their deadline, past a cancel.
const fairStopWait = time.Second

// attemptKey is the context key of a dispatched job's attempt.
type attemptKey struct{}

// attempt is a dispatched job's retry count and the most it may have:
// what asynq tells its handlers through GetRetryCount and GetMaxRetry;
// and its record as the dispatch read it (nil when it read none).
type attempt struct {
	retried, maxRetry int
	record            []byte
}

// dispatchedRecord is the running job's record as its dispatch read it;
// nil when it read none (asynq, a cluster, a job gone).
func dispatchedRecord(ctx context.Context) []byte {
	a, _ := ctx.Value(attemptKey{}).(attempt)
	return a.record
}

// retryCounts is the running task's retry count and its maximum, from
// fair dispatch or from asynq; ok is false when neither says.
func retryCounts(ctx context.Context) (retried, maxRetry int, ok bool) {
	if a, found := ctx.Value(attemptKey{}).(attempt); found {
		return a.retried, a.maxRetry, true
	}
	retried, _ = asynq.GetRetryCount(ctx)
	maxRetry, ok = asynq.GetMaxRetry(ctx)
	return retried, maxRetry, ok
}

func newFairRunner(q *fairQueue, slots int, idleWait time.Duration) *fairRunner {
	return &fairRunner{q: q, slots: max(slots, 1), idleWait: idleWait, lease: fairLease, signal: make(chan struct{}, 1), held: map[string]*fairJob{}}
}

// listen forwards wake-ups on the queue's channel until ctx ends.
func (r *fairRunner) listen(ctx context.Context, rdb redis.UniversalClient) error {
	return forwardWakeups(ctx, rdb, r.q.channel, r.wake)
}

func (r *fairRunner) wake() {
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// run takes and runs jobs until ctx ends, then waits up to grace for the
// running ones. Then it cancels them: those that stop within fairStopWait
// are given back to the front of their keys' lists for another worker.
// A job still running past that is not given back: its run goes on
// (fetch, upstream call and keep run to the task's deadline whatever is
// cancelled, so that no charged answer is lost), and a rerun beside it
// would call the upstream again. Its lease lapses instead (no heartbeat
// renews it), and only then, the process gone, does the job run again,
// as a killed worker's does.
func (r *fairRunner) run(ctx context.Context, grace time.Duration) {
	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	var running sync.WaitGroup
	// The heartbeat goes on while running jobs finish after ctx ends.
	beatCtx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	var side sync.WaitGroup
	side.Go(func() { r.heartbeat(beatCtx) })
	side.Go(func() {
		// At once, then every second: a worker that starts takes over the
		// jobs of one that died without waiting a tick, and learns whether
		// any key has turns (fairQueue.noTurns) before its first dispatches.
		r.maintain()
		onEveryTick(ctx, fairMaintainEvery, r.maintain)
	})
	slots := make(chan struct{}, r.slots)
	idle := false // the last dispatch found the ring empty
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		free := 1 + takeFree(slots)
		if idle && !r.waitForWork(ctx) {
			giveBack(slots, free)
			continue
		}
		// The slots freed while waiting for work go in this dispatch too.
		free += takeFree(slots)
		jobs, more, err := r.q.dispatch(ctx, r.lease, free)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("fair dispatch failed; trying again", "job_id", "", "err", err)
		}
		giveBack(slots, free-len(jobs))
		idle = len(jobs) == 0 || !more
		for _, job := range jobs {
			r.hold(job)
			running.Go(func() {
				defer func() { <-slots }()
				r.runJob(jobsCtx, job)
			})
		}
	}
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		r.stopping.Store(true)
		stopJobs()
		select {
		case <-done:
		case <-time.After(fairStopWait):
			r.mu.Lock()
			n := len(r.held)
			r.mu.Unlock()
			r.log.Warn("jobs still running at shutdown; they run again once their leases lapse", "job_id", "", "count", n)
		}
	}
	stopBeats()
	side.Wait()
}

// takeFree takes every slot free now, without waiting; how many.
func takeFree(slots chan struct{}) int {
	n := 0
	for {
		select {
		case slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
}

// giveBack frees n slots taken for jobs a dispatch did not hand out.
func giveBack(slots chan struct{}, n int) {
	for range n {
		<-slots
	}
}

// waitForWork waits for a wake-up or IdleWait; false when ctx ended.
func (r *fairRunner) waitForWork(ctx context.Context) bool {
	t := time.NewTimer(r.idleWait)
	defer t.Stop()
	select {
	case <-r.signal:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// runJob runs one dispatched job and ends it: done, or a retry after its
// backoff while retries are left.
func (r *fairRunner) runJob(ctx context.Context, job *fairJob) {
	defer r.release(job.member)
	payload, _ := json.Marshal(compressPayload{JobID: job.jobID, Owner: job.owner})
	tctx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, attempt{job.retried, r.maxRetry, job.record}), compressTimeout)
	err := r.handle(tctx, asynq.NewTask(TypeCompress, payload))
	cancel()
	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer acancel()
	if err != nil && r.stopping.Load() {
		// Cut short by the shutdown, and over: the next worker takes it
		// at once, no retry counted.
		if _, err := r.q.release(actx, job); err != nil {
			r.log.Warn("could not give back a job at shutdown; it runs again when its lease lapses", "job_id", job.jobID, "err", err)
		}
		return
	}
	var retryAt time.Time
	switch {
	case err == nil, errors.Is(err, asynq.SkipRetry):
	case job.retried < r.maxRetry:
		retryAt = time.Now().Add(r.retryAt(job.retried))
	default:
		r.log.Error("compress job out of retries; dropped", "job_id", job.jobID, "err", err)
	}
	if err := retryInPlace(actx, func() error { _, err := r.q.ack(actx, job, retryAt); return err }); err != nil {
		// The lease lapses and the job runs again: its run guard ends it.
		r.log.Warn("could not end a dispatched job; it runs again when its lease lapses", "job_id", job.jobID, "err", err)
	}
}

func (r *fairRunner) hold(job *fairJob) {
	r.mu.Lock()
	r.held[job.member] = job
	r.mu.Unlock()
}

func (r *fairRunner) release(member string) {
	r.mu.Lock()
	delete(r.held, member)
	r.mu.Unlock()
}

// heartbeat renews the leases of the jobs running here.
func (r *fairRunner) heartbeat(ctx context.Context) {
	onEveryTick(ctx, r.lease/(fairLease/fairHeartbeat), func() {
		r.mu.Lock()
		members := make([]string, 0, len(r.held))
		for m := range r.held {
			members = append(members, m)
		}
		r.mu.Unlock()
		if err := r.q.extend(ctx, members, r.lease); err != nil && ctx.Err() == nil {
			r.log.Warn("could not renew the leases of running jobs", "job_id", "", "err", err)
		}
	})
}

// maintain moves due retries and jobs whose lease lapsed back to their
// keys' lists.
func (r *fairRunner) maintain() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, recovered, err := r.q.maintain(ctx)
	if err != nil {
		r.log.Warn("fair dispatch maintenance failed; trying again", "job_id", "", "err", err)
		return
	}
	if recovered > 0 {
		r.log.Warn("requeued jobs whose worker stopped renewing their lease", "job_id", "", "count", recovered)
	}
}

// fairRunner is the worker's runner of fair dispatch.
func (w *Worker) fairRunner() *fairRunner {
	r := newFairRunner(w.fair, w.cfg.Concurrency, w.cfg.IdleWait)
	r.handle, r.retryAt, r.maxRetry, r.log = w.handleCompress, w.backoff, w.cfg.MaxCompressRetries, w.log
	if w.fairLease > 0 {
		r.lease = w.fairLease
	}
	return r
}
