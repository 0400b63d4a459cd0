package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Making jobs: a batch's items stored hidden until their batch is decided
// made (batchmaking.go), and a single job taken back. Keys:
//
//	jobmaking:{id}    a batch item's record while its batch is made: nothing
//	                  reads it (Get, listings, the worker); committing
//	                  renames it to job:{id}, same slot
//
// A single job has no hidden stage: it is one record, written in one round
// trip (CreateWithInput), queued, and taken back by Undo while no
// run started it.

// admitManyScript takes a place per id in the owner's in-flight set: all
// when fewer than the limit are held (ARGV[3]; 0: no cap), none otherwise,
// and none while the key's free failures are over budget (failbudget.go).
// A batch is admitted while its key has room, and its items then hold the
// key's places until they end: the key makes nothing more until it is back
// under its cap. KEYS[1] inflight set; ARGV[1] now, ARGV[2] deadline (Unix
// ms); ARGV[4] the failure window ms (0: no budget), ARGV[5] one failure's
// interval ms; ARGV[6..] ids. Returns 1 when admitted, 0 when full, minus
// the wait in ms when over the failure budget.
var admitManyScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local tat = tonumber(redis.call('ZSCORE', KEYS[1], '` + failuresMember + `') or now)
local over = tat - now - (window - tonumber(ARGV[5]))
if window > 0 and over > 0 then return -math.ceil(over) end
if tonumber(ARGV[3]) > 0 then
  local held = redis.call('ZCARD', KEYS[1])
  if tat > now then held = held - 1 end
  if held >= tonumber(ARGV[3]) then return 0 end
end
for i = 6, #ARGV, 500 do
  local args = {}
  for j = i, math.min(i + 499, #ARGV) do
    table.insert(args, ARGV[2])
    table.insert(args, ARGV[j])
  end
  redis.call('ZADD', KEYS[1], unpack(args))
end
redis.call('PEXPIREAT', KEYS[1], math.max(tonumber(ARGV[2]) + ` + inflightSlackLua + `, tat))
return 1
`)

// AdmitAll takes an in-flight place for each of ids (a batch's items)
// when owner holds fewer than limit (0: no cap); ETOOMANY otherwise, and
// EFAILBUDGET while its free failures are over budget.
func (s *Jobs) AdmitAll(ctx context.Context, owner string, ids []string, limit int) error {
	now := s.now()
	window, interval := s.failureArgs()
	args := make([]any, 0, 5+len(ids))
	args = append(args, now.UnixMilli(), now.Add(s.inflightTTL).UnixMilli(), limit, window, interval)
	for _, id := range ids {
		args = append(args, id)
	}
	ok, err := admitManyScript.Run(ctx, s.rdb, []string{s.keys.inflight(owner)}, args...).Int64()
	if err != nil {
		return storageErr(err)
	}
	return s.refusal(ok)
}

// Stage stores a batch item's input (for inputTTL; nil: none) and its
// record where nothing reads it until CommitStaged: one round trip,
// both in the job's slot.
func (s *Jobs) Stage(ctx context.Context, job *connector.Job, input connector.Bytes, inputTTL time.Duration) error {
	data, err := newJobRecord(job, s.now())
	if err != nil {
		return err
	}
	in, err := s.inputForMaking(ctx, job.ID, input, inputTTL)
	if err != nil {
		return err
	}
	_, err = s.clientFor(int64(len(in))).Pipelined(ctx, func(p redis.Pipeliner) error {
		if in != nil {
			p.Set(ctx, s.keys.blob(connector.InputBlobKey(job.ID)), in, max(inputTTL, 0))
		}
		p.Set(ctx, s.keys.stagedJob(job.ID), data, s.jobTTL)
		return nil
	})
	return storageErr(err)
}

// commitStagedScript moves a staged record to its place; 1 when it is
// there (moved now or before), 0 when it is in neither.
var commitStagedScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[2])
  return 1
end
return redis.call('EXISTS', KEYS[2])
`)

// CommitStaged makes owner's staged jobs ids visible, in one round
// trip: each record moves to its place (done before: a no-op), is listed
// under its owner and noted for the unqueued sweeper (unqueued.go), which
// queues it should its request not. A record in neither place (expired)
// is an error.
func (s *Jobs) CommitStaged(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	now := s.now()
	moved := make([]*redis.Cmd, len(ids))
	listed := make([]redis.Z, len(ids))
	noted := make([]redis.Z, len(ids))
	for i, id := range ids {
		listed[i] = redis.Z{Member: id}
		noted[i] = redis.Z{Score: float64(now.UnixMilli()), Member: id}
	}
	_, err := s.pipelinedScripts(ctx, func(p redis.Pipeliner) {
		for i, id := range ids {
			moved[i] = commitStagedScript.EvalSha(ctx, p, []string{s.keys.stagedJob(id), s.keys.job(id)})
		}
		idx := s.keys.jobIndex(owner)
		p.ZAdd(ctx, idx, listed...)
		p.ZRemRangeByLex(ctx, idx, "-", "("+idFloor(now.Add(-s.jobTTL)))
		p.PExpire(ctx, idx, s.listingTTL())
		p.ZAdd(ctx, s.keys.unqueued(), noted...)
	})
	if err != nil {
		return storageErr(err)
	}
	for i, c := range moved {
		if n, _ := c.Int(); n != 1 {
			return internalErr(fmt.Errorf("commit staged job %s: its record is gone", ids[i]))
		}
	}
	return nil
}

// RemoveStaged deletes owner's staged jobs ids, their inputs and their
// in-flight places (a batch decided removed).
func (s *Jobs) RemoveStaged(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = id
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Del(ctx, s.keys.stagedJob(id))
			p.Del(ctx, s.keys.blob(connector.InputBlobKey(id)))
		}
		p.ZRem(ctx, s.keys.inflight(owner), members...)
		return nil
	})
	return storageErr(err)
}

// undoJobScript deletes a job record and its input while no run started
// it (status queued); 1 when it is gone, 0 when it stays (it runs).
// KEYS[1] record, KEYS[2] input blob (both in the job's slot).
var undoJobScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('DEL', KEYS[2])
  return 1
end
local rec = cjson.decode(cur)
if rec.job == nil or rec.job.status ~= 'queued' then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`)

// Undo takes back a job whose request is answered with an error: the
// record and input are deleted, with its listing entry and in-flight
// place, unless a run started it already (removed false: it is made, and
// the answer is the job). A task queued for it finds no job and ends.
func (s *Jobs) Undo(ctx context.Context, owner, id string) (removed bool, err error) {
	s.records.forget(id)
	s.listings.unlisted(owner, id)
	n, err := undoJobScript.Run(ctx, s.rdb, []string{s.keys.job(id), s.keys.blob(connector.InputBlobKey(id))}).Int()
	if err != nil {
		return false, storageErr(err)
	}
	if n == 0 {
		return false, nil
	}
	// The record is gone: should this fail, a listing entry left is dropped
	// by List and a place left is pruned at its deadline.
	s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.keys.jobIndex(owner), id)
		p.ZRem(ctx, s.keys.inflight(owner), id)
		return nil
	})
	return true, nil
}
