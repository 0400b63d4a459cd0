package redisstore

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// DefaultInflightTTL is how long an admitted job counts against its key
// when nothing frees its place (a process died between admission and the
// job's record, or the record expired unfinished): its score is a deadline
// and admission prunes the ones past it.
const DefaultInflightTTL = time.Hour

// inflightRetryAfter is the Retry-After of a refusal: about one job's time.
const inflightRetryAfter = 5 * time.Second

// admitScript prunes the owner's stale places, refuses a key over its
// budget of free failures (failbudget.go), then takes a place if fewer than
// the limit are held. One key, so it runs on a cluster too.
//
// KEYS[1] inflight set; ARGV[1] now (Unix ms); ARGV[2] deadline (Unix ms);
// ARGV[3] limit; ARGV[4] job id; ARGV[5] the failure window ms (0: no
// budget); ARGV[6] one failure's interval ms. Returns 1 when admitted, 0
// when full, minus the wait in ms when over the failure budget.
var admitScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local s = redis.call('ZMSCORE', KEYS[1], ARGV[4], '` + failuresMember + `')
if s[1] then return 1 end
local tat = tonumber(s[2] or now)
local over = tat - now - (window - tonumber(ARGV[6]))
if window > 0 and over > 0 then return -math.ceil(over) end
local held = redis.call('ZCARD', KEYS[1])
if s[2] then held = held - 1 end
if held >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIREAT', KEYS[1], math.max(tonumber(ARGV[2]) + ` + inflightSlackLua + `, tat))
return 1
`)

// Admit counts job id against owner's limit of unfinished jobs:
// ETOOMANY (with RetryAfter) when owner already has limit, EFAILBUDGET when
// its free failures are over budget. Admission is atomic, so concurrent
// requests cannot overshoot the limit.
func (s *Jobs) Admit(ctx context.Context, owner, id string, limit int) error {
	now := s.now()
	window, interval := s.failureArgs()
	ok, err := admitScript.Run(ctx, s.rdb, []string{s.keys.inflight(owner)},
		now.UnixMilli(), now.Add(s.inflightTTL).UnixMilli(), limit, id, window, interval).Int64()
	if err != nil {
		return storageErr(err)
	}
	return s.refusal(ok)
}

// refusal is what an admission script's answer means: nil when admitted
// (above 0), ETOOMANY for 0, EFAILBUDGET for minus the wait in ms.
func (s *Jobs) refusal(admitted int64) error {
	switch {
	case admitted < 0:
		return s.failBudgetRefusal(-admitted)
	case admitted == 0:
		return &connector.Error{Code: connector.ETOOMANY, RetryAfter: inflightRetryAfter,
			Message: "this key has too many unfinished jobs; retry when some have finished"}
	}
	return nil
}

// Release frees id's place, for a job that was admitted but never
// made. Releasing an id twice, or one never admitted, is not an error.
func (s *Jobs) Release(ctx context.Context, owner, id string) error {
	return storageErr(s.rdb.ZRem(ctx, s.keys.inflight(owner), id).Err())
}
