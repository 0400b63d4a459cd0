package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Dedupe is the content dedupe index (the worker's DedupeIndex), under the
// owner's hash tag:
//
//	dedupe:{owner}:sha256:options       id of the completed job to reuse, TTL its result's
//	dedupeclaim:{owner}:sha256:options  id of the job producing that image's result, TTL the lease
//
// A completed job's claim is left to expire (Finish): the entry, read
// first by every look-up, speaks for it. A failed job's claim is dropped
// (Release), so that an identical job compresses at once.
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

// Enter returns k's source, or claims k for jobID, or names the holder
// of the claim. One round trip of two commands in the usual cases (a new
// image, a repeat): SET NX of the claim, then GET of the index entry.
//
// The claim is written before the entry is read: a claim that was gone
// by then was dropped by a failure (no entry to find), by Forget (the
// entry too), or by its holder's finish, which is then in the entry (an
// old worker drops its claim in the step that writes the entry; a new one
// leaves it). A job that finds a source may so have claimed the image
// too; the claim stays: the job is now the one producing a result for it,
// and every look-up reads the entry first.
//
// When the entry is empty and the claim was there, a GET names its
// holder; a claim that is this job's own (a re-run renews it) or that went
// between the reads is settled by enterScript, in one step.
func (s *Dedupe) Enter(ctx context.Context, k connector.DedupeKey, jobID string, lease time.Duration) (string, string, error) {
	entry, claim := s.keys.dedupe(k), s.keys.dedupeClaim(k)
	var claimed *redis.BoolCmd
	var source *redis.StringCmd
	s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		claimed = p.SetNX(ctx, claim, jobID, lease)
		source = p.Get(ctx, entry)
		return nil
	})
	if err := claimed.Err(); err != nil {
		return "", "", storageErr(err)
	}
	if err := source.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return "", "", storageErr(err)
	}
	if src := source.Val(); src != "" {
		return src, "", nil
	}
	if claimed.Val() {
		return "", jobID, nil
	}
	holder, err := s.rdb.Get(ctx, claim).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", "", storageErr(err)
	}
	if holder != "" && holder != jobID {
		return "", holder, nil
	}
	res, err := enterScript.Run(ctx, s.rdb, []string{entry, claim}, jobID, lease.Milliseconds()).StringSlice()
	if err != nil || len(res) != 2 {
		return "", "", storageErr(err)
	}
	return res[0], res[1], nil
}

// Finish records jobID as k's source for ttl (a later completion
// replaces it: its result lives longer): one SET. jobID's claim is left
// to expire: every look-up (Enter, enterScript, Source) reads the entry
// before the claim, so a claim beside an entry decides nothing. The
// caller releases the claim when it could outlive the entry (a ttl
// shorter than the lease).
func (s *Dedupe) Finish(ctx context.Context, k connector.DedupeKey, jobID string, ttl time.Duration) error {
	return storageErr(s.rdb.Set(ctx, s.keys.dedupe(k), jobID, ttl).Err())
}

// Forget drops k's entry and claim where they still name jobID: a
// claim is left to expire beside its entry (Finish), and must not outlast
// it, naming a job whose result is gone.
func (s *Dedupe) Forget(ctx context.Context, k connector.DedupeKey, jobID string) error {
	return storageErr(deleteIfScript.Run(ctx, s.rdb, []string{s.keys.dedupe(k), s.keys.dedupeClaim(k)}, jobID).Err())
}

// Release drops jobID's claim on k.
func (s *Dedupe) Release(ctx context.Context, k connector.DedupeKey, jobID string) error {
	return storageErr(deleteIfScript.Run(ctx, s.rdb, []string{s.keys.dedupeClaim(k)}, jobID).Err())
}

// enterScript: KEYS[1] the index entry, KEYS[2] the claim; ARGV[1] job
// id, ARGV[2] lease in ms. Returns {source, ""} when the index has one,
// else {"", holder} after setting the claim to ARGV[1] (renewing it when
// ARGV[1] holds it) unless another job holds it. Enter's step when its
// two reads do not settle it; older workers' whole look-up.
var enterScript = redis.NewScript(`
local src = redis.call('GET', KEYS[1])
if src then return {src, ''} end
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= ARGV[1] then return {'', cur} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return {'', ARGV[1]}
`)

// deleteIfScript deletes each of KEYS whose value is ARGV[1]; returns
// how many.
var deleteIfScript = redis.NewScript(`
local n = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then n = n + redis.call('DEL', key) end
end
return n
`)
