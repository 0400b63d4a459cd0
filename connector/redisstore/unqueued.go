package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Jobs whose task may never have reached the queue. Creating a job and
// queueing its task are two writes (the task is asynq's); a serve killed
// between them, or an enqueue that failed while the job's deletion failed
// too, left a job "queued" with no task until it expired.
//
// So every new job is also noted, in the same round trip as its record, in
// one sorted set by creation time (the unqueued key), unless its making
// queued it in the same script (makequeued.go), and every batch's items. The worker's sweeper
// (worker/unqueued.go) looks at the notes older than a few seconds: it
// queues the jobs that still have no task and forgets the rest. Nothing
// on the hot path removes a note: that would cost a command per job.

// unqueued is the sorted set of job ids by creation time (Unix ms).

// noteUnqueued queues, in p, the note of a new job.
func (s *Jobs) noteUnqueued(ctx context.Context, p redis.Pipeliner, id string, now time.Time) {
	p.ZAdd(ctx, s.keys.unqueued(), redis.Z{Score: float64(now.UnixMilli()), Member: id})
}

// Unqueued returns up to limit ids of jobs created before before whose
// notes the sweeper has not forgotten yet, oldest first.
func (s *Jobs) Unqueued(ctx context.Context, before time.Time, limit int) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.keys.unqueued(), &redis.ZRangeBy{
		Min: "-inf", Max: "(" + strconv.FormatInt(before.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	return ids, storageErr(err)
}

// ForgetUnqueued drops the notes of ids: their tasks are queued, or they
// are gone or finished.
func (s *Jobs) ForgetUnqueued(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = id
	}
	return storageErr(s.rdb.ZRem(ctx, s.keys.unqueued(), members...).Err())
}

// EnsureListed puts job id in owner's listing (GET /v1/jobs). A request
// whose record write went through but whose listing entry did not (its
// pipeline met a Redis restart: NOSCRIPT, then the reload failed) left a job
// that polling triggers never see; the retry that adopts the job lists it.
// Listing twice is a no-op. Like every writer of the listing it sets the
// listing's expiry (listingexpiry.go): a listing it makes anew must expire.
func (s *Jobs) EnsureListed(ctx context.Context, owner, id string) error {
	idx := s.keys.jobIndex(owner)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, idx, redis.Z{Member: id})
		p.PExpire(ctx, idx, s.listingTTL())
		return nil
	})
	return storageErr(err)
}

// GetMany reads the records of ids, for the sweeper: jobs[i] is ids[i]'s
// job, or nil with errs[i] its error (ENOTFOUND when the record is gone).
// A record that does not decode fails alone: its note stays, the others
// are settled. One read for them all (recordValues), where a GET each cost
// a command per job made: every note is looked at once its job has ended.
func (s *Jobs) GetMany(ctx context.Context, ids []string) (jobs []*connector.Job, errs []error) {
	jobs, errs = make([]*connector.Job, len(ids)), make([]error, len(ids))
	values, err := s.recordValues(ctx, ids)
	for i, id := range ids {
		switch {
		case err != nil:
			errs[i] = err
		case values[i] == nil:
			errs[i] = notFound("job", id)
		default:
			jobs[i], errs[i] = decodeJob(values[i])
		}
	}
	return jobs, errs
}
