package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Making batches, decided by compare-and-set (internal/app is the story;
// this file and jobmaking.go its writes). Keys:
//
//	batchmaking:{id}  hash: state (connector.MakingState) and record (the
//	                  batch, with its item ids) while it is made; TTL
//	                  makingTTL, JobTTL once decided made (until finished)
//	batchlease:{id}   the making request's lease on it: held while that
//	                  request lives (renewed), gone once it decided or died;
//	                  TTL the Idempotency-Key lease's
//	making            sorted set of batch ids being made, by start (Unix ms):
//	                  the sweeper finishes or removes those left behind
//
// The items are stored hidden, then committed or removed, by Jobs
// (jobmaking.go).

// makingTTL is how long a batch's decision is kept: far past any request.
// A made one is kept as long as its jobs (JobTTL) until it is finished,
// so that a batch answered 2xx is never forgotten unpublished.
const makingTTL = time.Hour

// beginBatchScript records KEYS[1] creating with record ARGV[1] (TTL
// ARGV[2] ms) and its maker's lease KEYS[2] (ARGV[3] ms), unless KEYS[1]
// exists: 0 then, and nothing written.
var beginBatchScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'creating', 'record', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return 1
`)

// Begin records that batch b is being made (MakingCreating), with its
// record and item ids, leased to the calling request (RenewMakingLease),
// and notes it for the sweeper. An id begun before is an error, and its
// record stays as it was.
func (s *Batches) Begin(ctx context.Context, b *connector.Batch) error {
	if b.ID == "" || len(b.JobIDs) == 0 {
		return internalErr(errors.New("begin batch: no id or no items"))
	}
	data, err := encodeBatch(b)
	if err != nil {
		return internalErr(err)
	}
	var set *redis.Cmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = beginBatchScript.Eval(ctx, p, []string{s.keys.batchMaking(b.ID), s.keys.batchLease(b.ID)},
			data, makingTTL.Milliseconds(), s.lease.Milliseconds())
		p.ZAddNX(ctx, s.keys.making(), redis.Z{Score: float64(s.now().UnixMilli()), Member: b.ID})
		return nil
	})
	if err != nil {
		return storageErr(err)
	}
	if n, _ := set.Int(); n != 1 {
		return internalErr(fmt.Errorf("begin batch: id %s already exists", b.ID))
	}
	return nil
}

// renewBatchLeaseScript extends the lease KEYS[2] (ARGV[1] ms) and the
// decision KEYS[1] (ARGV[2] ms) while the lease is held and the batch is
// creating; 0 when not.
var renewBatchLeaseScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'state') ~= 'creating' then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// MakingLease is how long the making request's lease on its batch lasts
// unrenewed: as long as an Idempotency-Key's (Options.IdempotencyLease).
func (s *Batches) MakingLease() time.Duration { return s.lease }

// RenewMakingLease extends the making request's lease on batch id (begun by
// Begin); false when it is no longer held: lapsed, or the batch is
// decided.
func (s *Batches) RenewMakingLease(ctx context.Context, id string) (bool, error) {
	n, err := renewBatchLeaseScript.Run(ctx, s.rdb, []string{s.keys.batchMaking(id), s.keys.batchLease(id)},
		s.lease.Milliseconds(), makingTTL.Milliseconds()).Int()
	if err != nil {
		return false, storageErr(err)
	}
	return n == 1, nil
}

// decideScript moves a decision KEYS[1] from creating to ARGV[1] and ends
// the maker's lease KEYS[2]; with ARGV[2] = '1' (not the maker) only once
// that lease lapsed. A made decision lives ARGV[3] ms (until finished).
// It returns the state after ("" when there is no decision).
var decideScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return '' end
if st == 'creating' then
  if ARGV[2] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then return st end
  redis.call('HSET', KEYS[1], 'state', ARGV[1])
  if ARGV[1] == 'made' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  redis.call('DEL', KEYS[2])
  return ARGV[1]
end
return st
`)

// Decide decides batch id made or removed, once, for the request
// making it: it returns to when this call decided, the earlier decision
// otherwise, and "" when the batch was never begun (or its decision
// expired).
func (s *Batches) Decide(ctx context.Context, id string, to connector.MakingState) (connector.MakingState, error) {
	return s.decide(ctx, id, to, false)
}

// RemoveLapsed decides batch id removed, as Decide does, for
// anyone but the request making it: only once that request's lease on it
// lapsed (it died). While the lease is held the batch stays creating, and
// MakingCreating is returned.
func (s *Batches) RemoveLapsed(ctx context.Context, id string) (connector.MakingState, error) {
	return s.decide(ctx, id, connector.MakingRemoved, true)
}

func (s *Batches) decide(ctx context.Context, id string, to connector.MakingState, lapsedOnly bool) (connector.MakingState, error) {
	only := "0"
	if lapsedOnly {
		only = "1"
	}
	st, err := decideScript.Run(ctx, s.rdb, []string{s.keys.batchMaking(id), s.keys.batchLease(id)},
		string(to), only, max(s.jobTTL, makingTTL).Milliseconds()).Text()
	if err != nil {
		return "", storageErr(err)
	}
	return connector.MakingState(st), nil
}

// Making reads a batch being made: its decision and its record (nil
// once it is done or removed). ENOTFOUND when there is no decision.
func (s *Batches) Making(ctx context.Context, id string) (*connector.Batch, connector.MakingState, error) {
	vals, err := s.rdb.HMGet(ctx, s.keys.batchMaking(id), "state", "record").Result()
	if err != nil {
		return nil, "", storageErr(err)
	}
	st, _ := vals[0].(string)
	if st == "" {
		return nil, "", notFound("batch", id)
	}
	rec, _ := vals[1].(string)
	if rec == "" {
		return nil, connector.MakingState(st), nil
	}
	b, err := decodeBatch([]byte(rec))
	return b, connector.MakingState(st), err
}

// EndMaking closes a batch's making: its decision becomes state
// (MakingDone after a finish; MakingRemoved stays) without its record or
// lease, kept makingTTL, and the sweeper forgets it.
func (s *Batches) EndMaking(ctx context.Context, id string, state connector.MakingState) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.keys.batchMaking(id), "state", string(state))
		p.HDel(ctx, s.keys.batchMaking(id), "record")
		p.PExpire(ctx, s.keys.batchMaking(id), makingTTL)
		p.Del(ctx, s.keys.batchLease(id))
		p.ZRem(ctx, s.keys.making(), id)
		return nil
	})
	return storageErr(err)
}

// MakingBefore returns up to limit ids of batches begun before before
// whose making has not ended, oldest first.
func (s *Batches) MakingBefore(ctx context.Context, before time.Time, limit int) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.keys.making(), &redis.ZRangeBy{
		Min: "-inf", Max: "(" + strconv.FormatInt(before.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	return ids, storageErr(err)
}
