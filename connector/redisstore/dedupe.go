package redisstore

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Dedupe is the content dedupe index (the worker's DedupeIndex), under the
// owner's hash tag:
//
//	dedupe:{owner}:sha256:options       id of the completed job to reuse, TTL its result's
//	dedupeclaim:{owner}:sha256:options  id of the job compressing that image now, TTL the lease
type Dedupe struct{ *conn }

// Source returns the job recorded for k, else the job holding k's
// claim, "" when neither. The claimant counts because a job completes (and
// its waiters see it) a moment before the worker records it as the source:
// an identical job then would wait for the claimant and reuse its result.
func (s *Dedupe) Source(ctx context.Context, k connector.DedupeKey) (string, error) {
	ids, err := s.rdb.MGet(ctx, s.keys.dedupe(k), s.keys.dedupeClaim(k)).Result()
	if err != nil {
		return "", storageErr(err)
	}
	for _, id := range ids {
		if id, ok := id.(string); ok && id != "" {
			return id, nil
		}
	}
	return "", nil
}

// Enter returns k's source, or claims k for jobID, or names the
// holder of the claim: one round trip.
func (s *Dedupe) Enter(ctx context.Context, k connector.DedupeKey, jobID string, lease time.Duration) (string, string, error) {
	res, err := enterScript.Run(ctx, s.rdb, []string{s.keys.dedupe(k), s.keys.dedupeClaim(k)}, jobID, lease.Milliseconds()).StringSlice()
	if err != nil || len(res) != 2 {
		return "", "", storageErr(err)
	}
	return res[0], res[1], nil
}

// Finish records jobID as k's source for ttl (a later completion
// replaces it: its result lives longer) and drops jobID's claim.
func (s *Dedupe) Finish(ctx context.Context, k connector.DedupeKey, jobID string, ttl time.Duration) error {
	return storageErr(finishScript.Run(ctx, s.rdb, []string{s.keys.dedupe(k), s.keys.dedupeClaim(k)}, jobID, ttl.Milliseconds()).Err())
}

// Forget drops k's entry if it still names jobID.
func (s *Dedupe) Forget(ctx context.Context, k connector.DedupeKey, jobID string) error {
	return storageErr(deleteIfScript.Run(ctx, s.rdb, []string{s.keys.dedupe(k)}, jobID).Err())
}

// Release drops jobID's claim on k.
func (s *Dedupe) Release(ctx context.Context, k connector.DedupeKey, jobID string) error {
	return storageErr(deleteIfScript.Run(ctx, s.rdb, []string{s.keys.dedupeClaim(k)}, jobID).Err())
}

// enterScript: KEYS[1] the index entry, KEYS[2] the claim; ARGV[1] job
// id, ARGV[2] lease in ms. Returns {source, ""} when the index has one,
// else {"", holder} after setting the claim to ARGV[1] unless another job
// holds it.
var enterScript = redis.NewScript(`
local src = redis.call('GET', KEYS[1])
if src then return {src, ''} end
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= ARGV[1] then return {'', cur} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return {'', ARGV[1]}
`)

// finishScript: KEYS as enterScript's; sets the index entry to ARGV[1]
// for ARGV[2] ms and drops the claim if ARGV[1] holds it.
var finishScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
`)

// deleteIfScript deletes KEYS[1] if its value is ARGV[1].
var deleteIfScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
