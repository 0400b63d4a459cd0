package worker

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
)

// WithFairDispatch makes the Queue put compress jobs on fair dispatch
// (dispatch.go) on rdb instead of asynq; keyLimit is the workers'
// Config.KeyShare (<= 0: no limit), which decides, with each key's own, when
// an enqueue puts the key in the ring. Deliveries stay on asynq.
func WithFairDispatch(rdb redis.UniversalClient, keyLimit int) QueueOption {
	return func(q *Queue) { q.fair = newFairQueue(rdb, q.queue, keyLimit) }
}

// FairEnqueueStep is fair dispatch's enqueue as a step of another script,
// for a store that queues a job in the script that makes it, in one round
// trip (redisstore.MakingQueue): lua defines the Lua function
// enqueue(k, id, owner, a), which queues job id of owner; k is keys(owner)
// and a is args. ok is false on asynq's queue, which has no such step.
// The store's Redis must be this queue's, and not a cluster: the step's
// keys are in the queue's hash slot, not the job's.
func (q *Queue) FairEnqueueStep() (lua string, keys func(owner string) []string, args []any, ok bool) {
	if q.fair == nil {
		return "", nil, nil, false
	}
	return fairEnqueueLua, q.fair.enqueueKeys, []any{q.fair.channel, q.fair.limit}, true
}

// recordKeys is what a job's record key is around its id, in the
// store's Redis: prefix + id + suffix. prefix "" reads no records.
type recordKeys struct{ prefix, suffix string }

func withFairQueue(f *fairQueue) QueueOption {
	return func(q *Queue) { q.fair = f }
}

// SetKeyTurns sets, on fair dispatch, one key's weight (its share of the
// turns against other waiting keys; 1 when unset; <= 0 leaves it) and its
// limit of jobs running at once across the deployment (0 leaves it;
// negative: none).
func (q *Queue) SetKeyTurns(ctx context.Context, owner string, weight float64, limit int) error {
	if q.fair == nil {
		return nil
	}
	return q.fair.setKeyTurns(ctx, owner, weight, limit)
}

// FairSizes are the sizes of fair dispatch's compress jobs: zero on
// asynq's queue.
func (q *Queue) FairSizes(ctx context.Context) (FairSizes, error) {
	if q.fair == nil {
		return FairSizes{}, nil
	}
	return q.fair.sizes(ctx)
}

// taskStates says, for each of ids, whether its compress job has a live
// task: asynq's task state, or on fair dispatch whether the dispatcher
// holds it (a job it does not is NoTask).
func (s *unqueuedSweeper) taskStates(ctx context.Context, ids []string) ([]asynqext.TaskState, error) {
	if s.fair == nil {
		return asynqext.QueueOf(s.qname).TaskStates(ctx, s.rdb, ids)
	}
	known, err := s.fair.known(ctx, ids)
	if err != nil {
		return nil, err
	}
	states := make([]asynqext.TaskState, len(ids))
	for i, k := range known {
		states[i] = asynqext.NoTask
		if k {
			states[i] = asynqext.TaskPending
		}
	}
	return states, nil
}
