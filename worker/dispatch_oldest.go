package worker

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// oldestKeys bounds the keys whose first ready job FairOldest reads.
const oldestKeys = 1000

// FairOldest is the age of the oldest job waiting for a worker on fair
// dispatch (0 when none, or on asynq's queue): the first ready job of each
// key in the ring (keys with ready work and room under their limit; the
// first oldestKeys by turn), dated by its id, a UUIDv7 made at the job's
// creation. A retry counts from its job's creation. For the backlog gauge
// imgflow_queue_latency_seconds, which asynq's inspector cannot read here.
func (q *Queue) FairOldest(ctx context.Context) (time.Duration, error) {
	if q.fair == nil {
		return 0, nil
	}
	f := q.fair
	owners, err := f.rdb.ZRange(ctx, f.key("ring"), 0, oldestKeys-1).Result()
	if err != nil || len(owners) == 0 {
		return 0, err
	}
	heads := make([]*redis.StringCmd, len(owners))
	if _, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, o := range owners {
			heads[i] = p.LIndex(ctx, f.ready(o), 0)
		}
		return nil
	}); err != nil && err != redis.Nil {
		return 0, err
	}
	var oldest time.Time
	for _, h := range heads {
		id, _ := parseEntry(h.Val())
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 {
			continue
		}
		sec, nsec := u.Time().UnixTime()
		if t := time.Unix(sec, nsec); oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	if oldest.IsZero() {
		return 0, nil
	}
	return max(time.Since(oldest), 0), nil
}
