package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/asynqext"
)

// The sweeper settles what requests left behind, each by a decision that
// is a compare-and-set in the store, so that it never races the request
// it cleans up after on a timer:
//
//   - a batch whose making a request did not end (serve killed, Redis lost
//     mid-request) is finished when it was decided made, and removed when
//     it was left creating, once its request's lease on it lapsed
//     (internal/app, SweepBatches): a live request keeps its batch however
//     long it takes;
//   - a job whose record was written but whose task never reached the
//     queue is queued: a single job whose serve was killed between its two
//     writes, or a batch item of a batch that was made (items are noted as
//     they are made visible). The sweeper never removes a job: only the
//     request that made it does (JobStore.Undo, a compare-and-set that loses once
//     a run started it), when its own enqueue failed. So no job answered
//     2xx can vanish, however long its request stalled between the writes,
//     and the sweeper's delay (unqueuedAfter) only says how soon a stray
//     job runs. The price: a job whose request died unanswered runs; a retry
//     with its Idempotency-Key finds it (charged once), a retry without one
//     makes another.
//
// The job store notes every new job (redisstore/unqueued.go); the sweeper
// forgets each note once the job's task exists, or the job is gone or
// finished. Queueing is safe from any number of sweepers at once: the task
// id is the job id, and a second enqueue is a no-op.
//
// A task that exists is not always a live one: asynq keeps a finished task
// for its retention, and a request whose enqueue reported an error that had
// in fact queued the task deleted the job; the task then ran, found no job
// and finished. A retry that made the job again under the same id (its
// Idempotency-Key fixes the id) met that retained task, and its enqueue was
// a no-op: the job stayed queued. So the sweeper reads the task's state,
// and a finished or archived task of an unfinished job is deleted and
// queued again.

// unqueuedAfter is how old a job must be before the sweeper looks at it:
// well past the create-then-enqueue of a live request (milliseconds). It
// only bounds how soon a stray job is settled: the decisions are the
// store's.
const unqueuedAfter = 15 * time.Second

// makingAfter is how old a batch's making must be before the sweeper looks
// at it: past the making of 1,000 items by a live request. It only bounds
// how soon a batch left behind is settled: whether its request still
// lives is its lease's to say (internal/app).
const makingAfter = time.Minute

// sweepEvery is how often each worker process sweeps: with unqueuedAfter, a
// job without a task is queued within 25 s of its creation, for one
// command per 10 s on an idle system.
const sweepEvery = 10 * time.Second

// sweepBatch bounds the notes one pass looks at.
const sweepBatch = 500

// BatchSweeper finishes or removes batches whose making a request left
// unended (app.Maker).
type BatchSweeper interface {
	SweepBatches(ctx context.Context, before time.Time) (settled int, more bool, err error)
}

// unqueuedSweeper queues jobs that have a record and no task.
type unqueuedSweeper struct {
	jobs      JobStore // its notes of new jobs, and their records
	queue     *Queue
	fair      *fairQueue            // set: compress jobs are fair dispatch's, not asynq tasks
	rdb       redis.UniversalClient // asynq's Redis: the tasks' states
	inspector *asynq.Inspector
	qname     string
	log       *slog.Logger
	// batches settles batches left half made; nil: none are.
	batches     BatchSweeper
	makingAfter time.Duration
	// countMissed counts batch items whose end was missed (batchsweep.go);
	// nil: none are.
	countMissed  func(ctx context.Context, before time.Time)
	runningAfter time.Duration
}

func (s *unqueuedSweeper) run(ctx context.Context, every time.Duration, after time.Duration) {
	onEveryTick(ctx, every, func() { s.sweep(ctx, after) })
}

// sweep is one round of the sweeper's three passes: batches left half
// made, jobs without a task, batch items whose end was missed.
func (s *unqueuedSweeper) sweep(ctx context.Context, after time.Duration) {
	if s.batches != nil {
		// Batches first: a finished one notes its items for the pass below.
		for ctx.Err() == nil {
			_, more, err := s.batches.SweepBatches(ctx, time.Now().Add(-s.makingAfter))
			if err != nil {
				s.log.Warn("batches left half made not settled; trying again next sweep", "err", err)
			}
			if !more {
				break
			}
		}
	}
	for s.pass(ctx, time.Now().Add(-after)) == sweepBatch && ctx.Err() == nil {
	}
	if s.countMissed != nil {
		s.countMissed(ctx, time.Now().Add(-s.runningAfter))
	}
}

// pass looks at the notes of jobs created before before and returns how
// many it looked at.
func (s *unqueuedSweeper) pass(ctx context.Context, before time.Time) int {
	ids, err := s.jobs.Unqueued(ctx, before, sweepBatch)
	if err != nil || len(ids) == 0 {
		return 0 // Redis down: next time
	}
	states, err := s.taskStates(ctx, ids)
	if err != nil {
		return 0
	}
	var done, look []string
	var lookStates []asynqext.TaskState
	for i, id := range ids {
		if state := states[i]; state != asynqext.NoTask && !state.Finished() {
			done = append(done, id) // asynq has it, live
		} else {
			look, lookStates = append(look, id), append(lookStates, state)
		}
	}
	jobs, errs := s.jobs.GetMany(ctx, look)
	for i, id := range look {
		if s.queueIfUnfinished(ctx, id, lookStates[i], jobs[i], errs[i]) {
			done = append(done, id)
		}
	}
	if err := s.jobs.ForgetUnqueued(ctx, done...); err != nil {
		return 0
	}
	return len(ids)
}

// queueIfUnfinished queues an unfinished job without a live task, deleting
// first a finished task it is behind (state). job and err are its record
// as read after state (GetMany). False when that could not be decided or
// done (the note stays).
func (s *unqueuedSweeper) queueIfUnfinished(ctx context.Context, id string, state asynqext.TaskState, job *connector.Job, err error) bool {
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		return true // taken back after a failed request, refused, or expired
	case err != nil:
		return false
	case job.Status.Finished():
		return true
	}
	if state != asynqext.NoTask {
		if err := s.inspector.DeleteTask(s.qname, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
			s.log.Warn("the finished task of an unfinished job could not be deleted; trying again next sweep", "job_id", id, "err", err)
			return false
		}
	}
	if err := s.queue.EnqueueCompress(ctx, id, job.Owner); err != nil {
		s.log.Warn("a job without a task could not be queued; trying again next sweep", "job_id", id, "err", err)
		return false
	}
	s.log.Warn("queued a job whose task never reached the queue (serve killed or enqueue failed)",
		"job_id", id, "status", job.Status, "age", time.Since(job.CreatedAt).Round(time.Second), "old_task", state)
	return true
}
