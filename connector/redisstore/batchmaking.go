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
//	                  makingTTL
//	making            sorted set of batch ids being made, by start (Unix ms):
//	                  the sweeper finishes or removes those left behind
//
// The items are stored hidden, then committed or removed, by Jobs
// (jobmaking.go).

// makingTTL is how long a batch's decision is kept: far past any request.
const makingTTL = time.Hour

func (s *base) batchMakingKey(id string) string { return s.prefix + "batchmaking:{" + id + "}" }
func (s *base) makingKey() string               { return s.prefix + "making" }

// BeginBatch records that batch b is being made (MakingCreating), with its
// record and item ids, and notes it for the sweeper.
func (s *Batches) BeginBatch(ctx context.Context, b *connector.Batch) error {
	if b.ID == "" || len(b.JobIDs) == 0 {
		return internalErr(errors.New("begin batch: no id or no items"))
	}
	data, err := encodeBatch(b)
	if err != nil {
		return internalErr(err)
	}
	key := s.batchMakingKey(b.ID)
	var set *redis.BoolCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, key, "state", string(connector.MakingCreating))
		p.HSet(ctx, key, "record", data)
		p.PExpire(ctx, key, makingTTL)
		p.ZAdd(ctx, s.makingKey(), redis.Z{Score: float64(s.now().UnixMilli()), Member: b.ID})
		return nil
	})
	if err != nil {
		return storageErr(err)
	}
	if !set.Val() {
		return internalErr(fmt.Errorf("begin batch: id %s already exists", b.ID))
	}
	return nil
}

// decideScript moves a decision from creating to ARGV[1]; it returns the
// state after ("" when there is no decision).
var decideScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return '' end
if st == 'creating' then
  redis.call('HSET', KEYS[1], 'state', ARGV[1])
  return ARGV[1]
end
return st
`)

// DecideBatch decides batch id made or removed, once: it returns to when
// this call decided, the earlier decision otherwise, and "" when the batch
// was never begun (or its decision expired).
func (s *Batches) DecideBatch(ctx context.Context, id string, to connector.MakingState) (connector.MakingState, error) {
	st, err := decideScript.Run(ctx, s.rdb, []string{s.batchMakingKey(id)}, string(to)).Text()
	if err != nil {
		return "", storageErr(err)
	}
	return connector.MakingState(st), nil
}

// MakingBatch reads a batch being made: its decision and its record (nil
// once it is done or removed). ENOTFOUND when there is no decision.
func (s *Batches) MakingBatch(ctx context.Context, id string) (*connector.Batch, connector.MakingState, error) {
	vals, err := s.rdb.HMGet(ctx, s.batchMakingKey(id), "state", "record").Result()
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

// EndBatchMaking closes a batch's making: its decision becomes state
// (MakingDone after a finish; MakingRemoved stays) without its record, and
// the sweeper forgets it.
func (s *Batches) EndBatchMaking(ctx context.Context, id string, state connector.MakingState) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.batchMakingKey(id), "state", string(state))
		p.HDel(ctx, s.batchMakingKey(id), "record")
		p.PExpire(ctx, s.batchMakingKey(id), makingTTL)
		p.ZRem(ctx, s.makingKey(), id)
		return nil
	})
	return storageErr(err)
}

// MakingBatches returns up to limit ids of batches begun before before
// whose making has not ended, oldest first.
func (s *Batches) MakingBatches(ctx context.Context, before time.Time, limit int) ([]string, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, s.makingKey(), &redis.ZRangeBy{
		Min: "-inf", Max: "(" + strconv.FormatInt(before.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	return ids, storageErr(err)
}
