package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

// MaxDeliveryAttempts bounds one job's delivery log: the oldest attempts
// make way beyond it. Ten scheduled attempts each for a callback and a
// dozen hooks, plus redeliveries, fit; at most about 1 KiB each.
const MaxDeliveryAttempts = 300

// deliveries:{id} holds a job's delivery attempts, JSON, oldest first. The job
// id is its hash tag, so it shares the job's slot on a cluster.

// recordAttemptScript appends an attempt (ARGV[1]) to a job's delivery log
// (KEYS[2]), keeps the newest ARGV[2], and gives the log the job record's
// (KEYS[1]) remaining life. A job already gone gets no log. Both keys carry
// the job id as hash tag, so this runs on a cluster too.
var recordAttemptScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
`)

// RecordDeliveryAttempt appends a to the job's delivery log, which expires
// with the job record, and indexes the delivery for the job's owner.
func (s *Hooks) RecordDeliveryAttempt(ctx context.Context, job *connector.Job, a *connector.DeliveryAttempt) error {
	return s.recordAttempt(ctx, "j", job.ID, s.keys.job(job.ID), job.Owner, a)
}

// DeliveryAttempts returns the job's delivery attempts, oldest first.
func (s *Hooks) DeliveryAttempts(ctx context.Context, jobID string) ([]*connector.DeliveryAttempt, error) {
	items, err := s.rdb.LRange(ctx, s.keys.deliveries(jobID), 0, -1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storageErr(err)
	}
	return decodeAttemptList(items)
}

func decodeAttemptList(items []string) ([]*connector.DeliveryAttempt, error) {
	out := make([]*connector.DeliveryAttempt, 0, len(items))
	for _, item := range items {
		var a connector.DeliveryAttempt
		if err := json.Unmarshal([]byte(item), &a); err != nil {
			return nil, internalErr(fmt.Errorf("decode delivery attempt: %w", err))
		}
		out = append(out, &a)
	}
	return out, nil
}
