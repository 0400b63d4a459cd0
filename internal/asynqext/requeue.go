package asynqext

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// requeueAbandonedScript moves every task of the active list KEYS[1] whose
// lease in KEYS[2] ended more than ARGV[2] seconds ago (by Redis's clock), or
// that has none, to the head of the pending list KEYS[3], and marks its hash
// (ARGV[1] .. id, in the queue's slot) pending, as asynq's requeue script
// does for one task. It returns the ids moved.
var requeueAbandonedScript = redis.NewScript(`
local ids = redis.call('LRANGE', KEYS[1], 0, -1)
if #ids == 0 then return {} end
local now = tonumber(redis.call('TIME')[1])
local moved = {}
for _, id in ipairs(ids) do
  local lease = redis.call('ZSCORE', KEYS[2], id)
  if not lease or tonumber(lease) + tonumber(ARGV[2]) < now then
    redis.call('LREM', KEYS[1], 0, id)
    redis.call('ZREM', KEYS[2], id)
    redis.call('RPUSH', KEYS[3], id)
    redis.call('HSET', ARGV[1] .. id, 'state', 'pending')
    moved[#moved + 1] = id
  end
end
return moved
`)

// RequeueAbandoned puts back at the head of q's pending list every active
// task whose lease ended more than grace ago (whole seconds, by Redis's
// clock: asynq writes leases in Unix seconds, rounded down) or that has no
// lease, and returns their ids. The decision is one script: two processes
// running it at once cannot both move a task, and a task just dequeued
// (fresh lease) is never touched. An idle queue costs one LLEN.
func (q Queue) RequeueAbandoned(ctx context.Context, rdb redis.Cmdable, grace time.Duration) ([]string, error) {
	if n, err := rdb.LLen(ctx, q.active).Result(); err != nil || n == 0 {
		return nil, err
	}
	keys := []string{q.active, q.lease, q.pending}
	return requeueAbandonedScript.Run(ctx, rdb, keys, q.taskPrefix, int64(grace/time.Second)).StringSlice()
}
