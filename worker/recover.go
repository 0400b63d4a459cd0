package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
)

// Abandoned tasks: asynq v0.26.0 (the latest release) recovers a task whose
// worker died only once its lease has expired for 30 s, and looks for such
// tasks once a minute (recoverer.go: cutoff now-30s, interval 1 min, both
// fixed), after a lease of 30 s: a killed worker's tasks sit "active" for
// 60–120 s. hibiken/asynq#1051 and #1144 describe tasks left active for good
// when their lease entry is missing.
//
// The recoverer below requeues sooner, on the same proof asynq uses: the
// task's lease. A live server holds a lease on every task it runs (the
// dequeue script writes it, its heartbeat extends it every 5 s for 30 s);
// once the lease has run out, asynq's processor writes nothing more for
// that task ("If lease is not valid, do not write to redis") and its
// heartbeat no longer extends it. So a task whose lease ran out, or that has
// no lease at all (asynq never leaves one so), has no server: it is put back
// at the head of the pending list, as asynq's own Requeue does.
//
// The decision is one Lua script (asynqext.RequeueAbandoned), on Redis's
// clock, over the whole active list: no process keeps timers of its own, so
// two recoverers cannot disagree, and a task that a server has just
// dequeued (fresh lease, not yet in any heartbeat) is never touched. A
// timer per process ("no live server's heartbeat lists it for 12 s") would
// not do: a process whose timer started on an earlier run of the task
// would requeue it while another server runs it, and the task would run
// twice.
//
// A handler whose lease ran out may still be running (compress.go goes on
// until the task's deadline to keep a charged answer); the re-run then
// calls the upstream with the same Idempotency-Key, which an upstream that
// honours it answers once (see compress.go).
//
// It relies on asynq's private layout (the active list, the leases, the
// pending list, the task hashes), which internal/asynqext spells and its
// contract tests hold to the asynq version linked.

// leaseGrace is how long past its lease's end (in whole seconds, as asynq
// stores it) a task waits before it is requeued: asynq rounds the deadline
// down to the second, and servers' clocks may differ a little from Redis's.
const leaseGrace = 2 * time.Second

// recoverEvery is how often each worker process looks for abandoned tasks.
const recoverEvery = 2 * time.Second

// abandonedRecoverer requeues the queue's tasks that no live server holds.
type abandonedRecoverer struct {
	rdb   redis.UniversalClient
	queue string
	log   *slog.Logger
}

func (r *abandonedRecoverer) run(ctx context.Context, every time.Duration) {
	onEveryTick(ctx, every, func() { r.pass(ctx) })
}

// onEveryTick calls fn every interval until ctx ends: the loop of the
// worker's background passes.
func onEveryTick(ctx context.Context, every time.Duration, fn func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// pass looks once and returns the ids it requeued. An idle queue costs one
// LLEN, not the script's LRANGE and its call.
func (r *abandonedRecoverer) pass(ctx context.Context) []string {
	moved, err := asynqext.QueueOf(r.queue).RequeueAbandoned(ctx, r.rdb, leaseGrace)
	if err != nil {
		return nil // Redis down or restarting: look again next time
	}
	for _, id := range moved {
		r.log.Warn("requeued a task whose lease ran out (its worker was killed or cut off from Redis)", "task_id", id)
	}
	return moved
}
