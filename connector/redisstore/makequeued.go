package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Queueing a job in the script that makes it. Made apart, a job is a round
// trip (CreateWithInput's pipeline) and its queueing another (the queue's
// enqueue), with a note between them (unqueued.go) for the sweeper to queue
// a job whose serve died in between. On one Redis that is fair dispatch's
// too, one script does both: the record is written, admitted and listed,
// and queued, or none of it is. That is a round trip less on every job's
// way to a worker, and two commands less (the enqueue's EVALSHA, the
// note), with nothing left for the sweeper to look at later. A Redis
// Cluster keeps the two steps: the queue's keys are in its own hash slot.

// MakingQueue is a queue's enqueue as a step of the making script: Lua
// defines the Lua function enqueue(k, id, owner, a), which queues job id
// of owner with k = Keys(owner) and a = Args (worker.Queue.FairEnqueueStep).
type MakingQueue struct {
	Lua  string
	Keys func(owner string) []string
	Args []any
}

// makingQueue is a MakingQueue with its script.
type makingQueue struct {
	MakingQueue
	script *redis.Script
}

// makeQueuedBody runs after admitAndListLua and the queue's Lua: KEYS[1],
// KEYS[2] and ARGV[1..10] are admitAndList's; KEYS[3] record, KEYS[4]
// input blob (its slot), KEYS[5..] the queue's k; ARGV[11] the record,
// ARGV[12] its TTL ms, ARGV[13] owner, ARGV[14..] the queue's a. The
// record is written first: an id that is another request's job already is
// answered so (it was queued by its maker), before anything of the
// owner's is touched; a refusal takes back the record and the input.
// Returns {1, admitAndList's answer} when the record was written, {0, 0}
// when the id was taken.
const makeQueuedBody = `
if not redis.call('SET', KEYS[3], ARGV[11], 'PX', ARGV[12], 'NX') then return {0, 0} end
local admitted = admitAndList()
if admitted <= 0 then
  redis.call('DEL', KEYS[3], KEYS[4])
  return {1, admitted}
end
local k, a = {}, {}
for i = 5, #KEYS do k[#k + 1] = KEYS[i] end
for i = 14, #ARGV do a[#a + 1] = ARGV[i] end
enqueue(k, ARGV[4], ARGV[13], a)
return {1, admitted}
`

// QueueAtMaking makes CreateWithInput queue each job it makes on q, in
// its making's script: q must be on this store's Redis. It is refused
// (false) on a Redis Cluster, where the making and the queue are in
// different slots; the service queues after the making then.
func (s *Jobs) QueueAtMaking(q MakingQueue) bool {
	if s.onCluster() {
		return false
	}
	s.making = &makingQueue{MakingQueue: q, script: redis.NewScript(admitAndListLua + q.Lua + makeQueuedBody)}
	return true
}

// QueuesAtMaking says whether CreateWithInput queues the jobs it makes
// (QueueAtMaking): the service must not queue them again.
func (s *Jobs) QueuesAtMaking() bool { return s.making != nil }

// createQueued is CreateWithInput with the queueing in its script: the
// input's SET (when it has one) and the script, in one round trip.
func (s *Jobs) createQueued(ctx context.Context, job *connector.Job, data, in []byte, inputTTL time.Duration, admission []any, expiryDue bool, now time.Time) error {
	inputKey := s.keys.blob(connector.InputBlobKey(job.ID))
	keys := append([]string{s.keys.inflight(job.Owner), s.keys.jobIndex(job.Owner), s.keys.job(job.ID), inputKey},
		s.making.Keys(job.Owner)...)
	args := append(admission, data, s.jobTTL.Milliseconds(), job.Owner)
	args = append(args, s.making.Args...)
	var made *redis.Cmd
	_, err := s.pipelinedScriptsLoading(ctx, s.clientFor(int64(len(in))), []*redis.Script{s.making.script}, func(p redis.Pipeliner) {
		if in != nil {
			p.Set(ctx, inputKey, in, max(inputTTL, 0))
		}
		made = s.making.script.EvalSha(ctx, p, keys, args...)
	})
	if err != nil {
		return storageErr(err)
	}
	res, err := made.Int64Slice()
	if err != nil || len(res) != 2 {
		return internalErr(fmt.Errorf("create job %s: answer %v: %w", job.ID, res, err))
	}
	created, admitted := res[0] == 1, res[1]
	switch {
	case !created:
		// Its input, written over with the same request's bytes, stays
		// with it.
		return jobExists(job.ID)
	case admitted <= 0:
		return s.refusal(admitted)
	}
	if expiryDue {
		s.listings.expirySet(job.Owner, job.ID, now)
	}
	return nil
}
