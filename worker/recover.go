package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Orphaned tasks: asynq v0.26.0 (the latest release) recovers a task whose
// worker died only once its lease has expired for 30 s, and looks for such
// tasks once a minute (recoverer.go: cutoff now-30s, interval 1 min, both
// fixed), after a lease of 30 s. A killed worker's tasks therefore sit
// "active" for 60–120 s; after a Redis outage longer than the lease, every
// task that was running does too, since the processor gives them up without
// writing anything (processor.go: "If lease is not valid, do not write to
// redis; Let recoverer take care of it"). hibiken/asynq#1051 and #1144
// describe tasks left active for good when their lease entry is missing.
//
// The recoverer below works around both from our side. Every live asynq
// server writes the ids of the tasks it runs to Redis every 5 s, under a key
// that expires after 10 s (heartbeat.go). A task that stays in the active
// list while no live server claims it, for longer than orphanAfter, has no
// worker: it is put back at the head of the pending list, as asynq's own
// Requeue does. It runs again at once, and the billing path makes the
// re-run safe (see compress.go).
//
// It relies on asynq's key layout of v0.26.0 (asynq:{queue}:active, :lease,
// :pending, :t:<id>); TestKilledWorkersTaskIsRecoveredWithinSeconds fails
// if that layout changes.

// orphanAfter is how long a task must stay active and unclaimed by any live
// server before it is requeued: longer than a heartbeat (5 s) plus the
// delay between a dequeue and the next heartbeat that lists the task, so a
// task that a live worker just took is never requeued.
const orphanAfter = 12 * time.Second

// recoverEvery is how often each worker process looks for orphans.
const recoverEvery = 2 * time.Second

// requeueOrphanScript moves task ARGV[1] from the active list (KEYS[1]) and
// the lease set (KEYS[2]) to the head of the pending list (KEYS[3]) and
// marks its hash (KEYS[4]) pending. 0 when it was no longer active.
var requeueOrphanScript = redis.NewScript(`
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[4], 'state', 'pending')
return 1
`)

// orphanRecoverer requeues the queue's tasks that no live worker runs.
type orphanRecoverer struct {
	rdb       redis.UniversalClient
	inspector *asynq.Inspector
	queue     string
	log       *slog.Logger
	after     time.Duration
	// unclaimed is when each active, unclaimed task was first seen so.
	unclaimed map[string]time.Time
}

func (r *orphanRecoverer) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.pass(ctx, time.Now())
		}
	}
}

// pass looks once: it requeues tasks unclaimed for r.after and returns
// how many.
func (r *orphanRecoverer) pass(ctx context.Context, now time.Time) int {
	prefix := "asynq:{" + r.queue + "}:"
	active, err := r.rdb.LRange(ctx, prefix+"active", 0, -1).Result()
	if err != nil {
		return 0 // Redis down: nothing to do until it is back
	}
	if len(active) == 0 {
		clear(r.unclaimed)
		return 0
	}
	servers, err := r.inspector.Servers()
	if err != nil {
		return 0
	}
	claimed := map[string]bool{}
	for _, s := range servers {
		for _, w := range s.ActiveWorkers {
			claimed[w.TaskID] = true
		}
	}
	seen := map[string]bool{}
	n := 0
	for _, id := range active {
		seen[id] = true
		if claimed[id] {
			delete(r.unclaimed, id)
			continue
		}
		first, ok := r.unclaimed[id]
		if !ok {
			r.unclaimed[id] = now
			continue
		}
		if now.Sub(first) < r.after {
			continue
		}
		keys := []string{prefix + "active", prefix + "lease", prefix + "pending", prefix + "t:" + id}
		moved, err := requeueOrphanScript.Run(ctx, r.rdb, keys, id).Int()
		if err != nil {
			continue
		}
		delete(r.unclaimed, id)
		if moved == 1 {
			n++
			r.log.Warn("requeued a task no live worker runs (worker killed or cut off from Redis)",
				"task_id", id, "unclaimed_for", now.Sub(first).Round(time.Second))
		}
	}
	for id := range r.unclaimed {
		if !seen[id] {
			delete(r.unclaimed, id)
		}
	}
	return n
}
