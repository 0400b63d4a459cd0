package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

// Fair dispatch of compress jobs (IMGFLOW_DISPATCH=fair): imgflow's own
// queue in Redis, in the shape of BullMQ Pro's groups, instead of asynq's
// one FIFO list. Fairness is decided where a job is handed out, once,
// across the deployment, so nothing is parked and nothing polls back:
//
//	ready:{owner}  LIST   each key's jobs, in order ("id" or "id|retries")
//	ring           ZSET   keys with ready work and room, by virtual time
//	state          HASH   n:{owner} its runs under a limit (no field at 0), c:{owner} its
//	                      limit, w:{owner} its weight
//	leases         ZSET   "owner\nentry\ntoken" by lease deadline (ms)
//	delayed        ZSET   "owner\nentry" of retries by due time (ms)
//	known          HASH   job id → owner while queued, running or retrying
//
// A dispatch takes the key with the lowest virtual time, pops its first
// job and leases it; the key's time advances by 1/weight (stride
// scheduling: weights 1:2:4 get shares 1:2:4 while all wait), and it stays
// in the ring while it has ready jobs and runs fewer than its limit. A key
// that enters the ring does so at 0, ahead of every key that had a turn,
// and its first turn starts at the lowest time among those (the clock): so
// a key that waited gets its turn at once, a flood cannot build credit, and
// whoever puts a key in the ring (an enqueue, a run's end, maintenance)
// reads no clock. A ring whose top two are both new looks the clock up (a
// ZRANGEBYSCORE), which only keys entering together pay.
// Only a key with a limit has its runs counted (n:, and its leases' tokens
// end in L): a key without one costs no count per job. Every key is in one hash
// tag ({queue}), so each script runs on one slot of a Redis Cluster.
//
// A job's lease is held by its worker's heartbeat; a worker that dies
// leaves it to lapse, and any worker's maintenance puts the job back at the
// head of its key's list: it runs again under the run guard and the call
// record (compress.go), as a task asynq recovers does. The end of a run
// (ackScript) drops the lease, counts the key's job out and either forgets
// the job or schedules its retry as a delayed entry; a done run of a key
// without a limit has nothing to count and is two plain commands (ack).

// fairLease is how long a dispatched job is held without a heartbeat;
// fairHeartbeat how often a worker extends the leases it holds.
const (
	fairLease     = 30 * time.Second
	fairHeartbeat = 5 * time.Second
	// fairMaintainEvery is how often each worker moves due retries and
	// lapsed leases back to their keys' lists.
	fairMaintainEvery = time.Second
	// fairMaintainBatch bounds the entries one maintenance moves.
	fairMaintainBatch = 100
)

// fairEnqueueLua defines enqueue(k, id, owner, a), which queues a job
// once: k[1] the key's ready list, k[2] ring, k[3] known, k[4] state; a[1]
// the wake-up channel, a[2] the default limit (<= 0: none). A key that
// enters the ring wakes the idle workers. Under a default limit a key at
// it stays out (one of its runs' ends puts it back); a key with a limit of
// its own only is found at it by the dispatch, which takes it out the same
// way. Returns 1 when queued, 0 when the job is known already. It is
// enqueueScript's body, and the step with which a store's making script
// queues the job it makes (FairEnqueueStep).
const fairEnqueueLua = `
local function enqueue(k, id, owner, a)
  if redis.call('HSETNX', k[3], id, owner) == 0 then return 0 end
  redis.call('RPUSH', k[1], id)
  if tonumber(a[2]) > 0 then
    local s = redis.call('HMGET', k[4], 'n:' .. owner, 'c:' .. owner)
    local c = tonumber(s[2] or a[2])
    if c > 0 and tonumber(s[1] or 0) >= c then return 1 end
  end
  if redis.call('ZADD', k[2], 'NX', 0, owner) == 1 then
    redis.call('PUBLISH', a[1], '')
  end
  return 1
end
`

// enqueueScript is enqueue on its own: KEYS are k; ARGV[1] job id,
// ARGV[2] owner, ARGV[3..] a.
var enqueueScript = redis.NewScript(fairEnqueueLua + `
return enqueue(KEYS, ARGV[1], ARGV[2], {ARGV[3], ARGV[4]})
`)

// dispatchScript hands out up to ARGV[5] jobs, one turn at a time:
// KEYS[1] ring, KEYS[2] state, KEYS[3] leases; ARGV[1] the ready lists'
// prefix, ARGV[2] the lease deadline (ms), ARGV[3] default limit, ARGV[4]
// the lease token, ARGV[6] "1" when the state hash was empty at the
// worker's last look and there is no default limit: no key has a weight,
// a limit or a count, and the turn reads none (fairQueue.noTurns);
// ARGV[7] and ARGV[8], when ARGV[7] is not "", what a job's record key is
// around its id: each job handed out comes with its record (false when
// there is none), read in the same script (fairQueue.records says when).
// Returns {more, owner, entry, token, record, owner, entry, token, record,
// ...}: more is
// 1 when the ring still holds a key after the last turn; each token is
// ARGV[4] with the turn's number, and ends in L when
// the key has a limit, so that only its runs' ends look for the key's
// ready jobs (a key without one is never left out of the ring while it has
// any). A key found at its limit (the enqueue that put it in the ring did
// not know the limit) leaves the ring: the end of one of its runs puts it
// back. One call fills every free slot of a worker, so a busy worker
// dispatches once per round trip, not once per job. A key with room pops
// two entries and pushes the second back: a lone job costs one LPOP (no
// LLEN), a queue two commands as LPOP and LLEN did.
var dispatchScript = redis.NewScript(`
local out = {0}
local want = tonumber(ARGV[5])
local taken, misses = 0, 0
while taken < want and misses < 8 do
  local top = redis.call('ZRANGE', KEYS[1], 0, 1, 'WITHSCORES')
  if #top == 0 then out[1] = 0; return out end
  local owner, vt = top[1], tonumber(top[2])
  if vt == 0 and top[4] then
    -- A key entered at 0: its first turn starts at the clock.
    vt = tonumber(top[4])
    if vt == 0 then
      local c = redis.call('ZRANGEBYSCORE', KEYS[1], '(0', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
      vt = tonumber(c[2] or 0)
    end
  end
  local ready = ARGV[1] .. owner
  local s = {}
  if ARGV[6] ~= '1' then
    s = redis.call('HMGET', KEYS[2], 'n:' .. owner, 'c:' .. owner, 'w:' .. owner)
  end
  local n = tonumber(s[1] or 0) + 1
  local c = tonumber(s[2] or ARGV[3])
  local entry, second = false, false
  if c <= 0 or n < c then
    -- Two at once: a second says the key has more, and goes back.
    local got = redis.call('LPOP', ready, 2)
    if got then
      entry, second = got[1], got[2]
      if second then redis.call('LPUSH', ready, second) end
    end
  elseif n == c then
    entry = redis.call('LPOP', ready)
  end
  if entry then
    taken = taken + 1
    local w = tonumber(s[3] or 1)
    if w <= 0 then w = 1 end
    local token = ARGV[4] .. taken
    if c > 0 then
      redis.call('HSET', KEYS[2], 'n:' .. owner, n)
      token = token .. 'L'
    end
    redis.call('ZADD', KEYS[3], ARGV[2], owner .. '\n' .. entry .. '\n' .. token)
    local record = false
    if ARGV[7] ~= '' then
      record = redis.call('GET', ARGV[7] .. string.match(entry, '^[^|]*') .. ARGV[8])
    end
    out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = owner, entry, token, record
    local more = #top > 2
    if second then
      redis.call('ZADD', KEYS[1], vt + 1 / w, owner)
      more = true
    else
      redis.call('ZREM', KEYS[1], owner)
    end
    if more then out[1] = 1 else out[1] = 0; return out end
  else
    redis.call('ZREM', KEYS[1], owner)
    misses = misses + 1
  end
end
return out
`)

// ackScript ends a run: KEYS[1] ring, KEYS[2] state, KEYS[3] leases,
// KEYS[4] known, KEYS[5] the key's ready list, KEYS[6] delayed; ARGV[1]
// the lease member, ARGV[2] owner, ARGV[3] job id, ARGV[4] default limit,
// ARGV[5] wake-up channel, ARGV[6] the retry's due time (ms; 0: the job is
// done), ARGV[7] the retry's entry. A run of a key with a limit (its
// token ends in L) puts the key back in the ring when it has ready jobs
// and is now under its limit. Returns 0 when the lease was lost
// (maintenance put the job back already: its next run ends it), 1
// otherwise.
var ackScript = redis.NewScript(`
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then return 0 end
local limited = string.sub(ARGV[1], -1) == 'L'
local n = 0
if limited then
  n = redis.call('HINCRBY', KEYS[2], 'n:' .. ARGV[2], -1)
  if n <= 0 then redis.call('HDEL', KEYS[2], 'n:' .. ARGV[2]) end
end
if ARGV[6] ~= '0' then
  redis.call('ZADD', KEYS[6], ARGV[6], ARGV[2] .. '\n' .. ARGV[7])
else
  redis.call('HDEL', KEYS[4], ARGV[3])
end
if limited and redis.call('LLEN', KEYS[5]) > 0 then
  local c = tonumber(redis.call('HGET', KEYS[2], 'c:' .. ARGV[2]) or ARGV[4])
  if c <= 0 or n < c then
    if redis.call('ZADD', KEYS[1], 'NX', 0, ARGV[2]) == 1 then
      redis.call('PUBLISH', ARGV[5], '')
    end
  end
end
return 1
`)

// releaseScript gives a running job back at once (a worker shutting down
// with it unfinished): its lease goes, its key counts it out, and it goes
// back to the front of its key's list, as asynq requeues a task at
// shutdown. KEYS[1] ring, KEYS[2] state, KEYS[3] leases, KEYS[4] the key's
// ready list; ARGV[1] the lease member, ARGV[2] owner, ARGV[3] its entry,
// ARGV[4] wake-up channel. Returns 0 when the lease was lost already.
var releaseScript = redis.NewScript(`
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then return 0 end
if string.sub(ARGV[1], -1) == 'L' and redis.call('HINCRBY', KEYS[2], 'n:' .. ARGV[2], -1) <= 0 then
  redis.call('HDEL', KEYS[2], 'n:' .. ARGV[2])
end
redis.call('LPUSH', KEYS[4], ARGV[3])
redis.call('ZADD', KEYS[1], 'NX', 0, ARGV[2])
redis.call('PUBLISH', ARGV[4], '')
return 1
`)

// maintainScript moves due retries to the back of their keys' lists and
// jobs whose lease lapsed to the front (their runs count nothing), and
// puts those keys back in the ring: KEYS[1] ring, KEYS[2] state, KEYS[3]
// leases, KEYS[4] delayed; ARGV[1] now (ms), ARGV[2] the ready lists'
// prefix, ARGV[3] default limit, ARGV[4] wake-up channel, ARGV[5] batch.
// Returns {retries moved, leases recovered, fields in state}.
var maintainScript = redis.NewScript(`
local touched = {}
local due = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[1], 'LIMIT', 0, ARGV[5])
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[4], m)
  local owner, entry = string.match(m, '^(.-)\n(.*)$')
  redis.call('RPUSH', ARGV[2] .. owner, entry)
  touched[owner] = true
end
local lost = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1], 'LIMIT', 0, ARGV[5])
for _, m in ipairs(lost) do
  redis.call('ZREM', KEYS[3], m)
  local owner, entry = string.match(m, '^(.-)\n(.-)\n[^\n]*$')
  if string.sub(m, -1) == 'L' and redis.call('HINCRBY', KEYS[2], 'n:' .. owner, -1) <= 0 then
    redis.call('HDEL', KEYS[2], 'n:' .. owner)
  end
  redis.call('LPUSH', ARGV[2] .. owner, entry)
  touched[owner] = true
end
local woken = false
for owner in pairs(touched) do
  local s = redis.call('HMGET', KEYS[2], 'n:' .. owner, 'c:' .. owner)
  local c = tonumber(s[2] or ARGV[3])
  if c <= 0 or tonumber(s[1] or 0) < c then
    redis.call('ZADD', KEYS[1], 'NX', 0, owner)
    woken = true
  end
end
if woken then redis.call('PUBLISH', ARGV[4], '') end
return {#due, #lost, redis.call('HLEN', KEYS[2])}
`)

// fairQueue is the Redis side of fair dispatch on one queue.
type fairQueue struct {
	rdb     redis.UniversalClient
	prefix  string // "imgflow:fair:{queue}:"
	channel string // the queue's wake-up channel
	// limit is how many jobs of one key run at once across the
	// deployment when the key has no limit of its own (<= 0: no limit).
	limit int
	// records, when set, is what a job's record key is around its id: the
	// dispatch reads each record it hands out (Config.RecordKeyPrefix).
	records recordKeys
	// noTurns is set while the state hash was empty at the last
	// maintenance (each second): no key has a weight, a limit or a count,
	// so, with no default limit, a dispatch reads no key's turns (a
	// command less a job). A weight or limit set meanwhile takes effect at
	// the next maintenance, within fairMaintainEvery; the runs dispatched
	// before it are not counted against the new limit, and their ends count
	// nothing out (their tokens have no L), so the counts stay true.
	noTurns atomic.Bool
}

func newFairQueue(rdb redis.UniversalClient, queue string, limit int) *fairQueue {
	if queue == "" {
		queue = DefaultQueue
	}
	return &fairQueue{rdb: rdb, prefix: "imgflow:fair:{" + queue + "}:", channel: wakeChannel(queue), limit: limit}
}

func (f *fairQueue) key(name string) string { return f.prefix + name }

// enqueueKeys are enqueue's k for a job of owner.
func (f *fairQueue) enqueueKeys(owner string) []string {
	return []string{f.ready(owner), f.key("ring"), f.key("known"), f.key("state")}
}
func (f *fairQueue) ready(owner string) string { return f.prefix + "ready:" + owner }

// fairJob is a job a dispatch handed out.
type fairJob struct {
	owner, jobID string
	retried      int
	member       string // its lease
	// record is the job's record as the dispatch read it (nil when it
	// reads none, or there was none).
	record []byte
}

// enqueue queues jobID of owner unless it is queued, running or retrying.
func (f *fairQueue) enqueue(ctx context.Context, jobID, owner string) error {
	err := enqueueScript.Run(ctx, f.rdb, f.enqueueKeys(owner), jobID, owner, f.channel, f.limit).Err()
	if err != nil {
		return &connector.Error{Code: connector.EUNAVAILABLE, Message: "queue unavailable", RetryAfter: 5 * time.Second, Err: err}
	}
	return nil
}

// dispatch takes up to max jobs by the keys' turns, leased until
// now+lease; none when no key has ready work. more says whether another
// may be ready.
func (f *fairQueue) dispatch(ctx context.Context, lease time.Duration, max int) (jobs []*fairJob, more bool, err error) {
	res, err := dispatchScript.Run(ctx, f.rdb, []string{f.key("ring"), f.key("state"), f.key("leases")},
		f.prefix+"ready:", time.Now().Add(lease).UnixMilli(), f.limit, leaseToken(), max, f.skipTurns(),
		f.records.prefix, f.records.suffix).Slice()
	if err != nil || len(res) == 0 {
		return nil, false, err
	}
	n, _ := res[0].(int64)
	for i := 1; i+3 < len(res); i += 4 {
		owner, _ := res[i].(string)
		entry, _ := res[i+1].(string)
		token, _ := res[i+2].(string)
		record, _ := res[i+3].(string)
		id, retried := parseEntry(entry)
		job := &fairJob{owner: owner, jobID: id, retried: retried, member: owner + "\n" + entry + "\n" + token}
		if record != "" {
			job.record = []byte(record)
		}
		jobs = append(jobs, job)
	}
	return jobs, n == 1, nil
}

// skipTurns is dispatchScript's ARGV[6].
func (f *fairQueue) skipTurns() string {
	if f.limit <= 0 && f.noTurns.Load() {
		return "1"
	}
	return "0"
}

// ack ends a run of job: done, or (retryAt set) retried then as its
// next attempt. False when its lease was lost meanwhile.
//
// A done run of a key without a limit (the common end) is two plain
// commands, no script: the lease goes and the job is forgotten. Had the
// lease lapsed meanwhile (maintenance put the job back in its key's list),
// the job is forgotten while it waits for a run that will find it finished
// and end at once; being forgotten only lets an enqueue of its id queue it
// a second time, and nothing enqueues a job with a record this old (serve
// makes new ids; the sweeper queues only jobs its note names, a note
// forgotten once the job was known). So the script's check, which kept the
// job known, is not worth its command per job.
func (f *fairQueue) ack(ctx context.Context, job *fairJob, retryAt time.Time) (bool, error) {
	if retryAt.IsZero() && !strings.HasSuffix(job.member, "L") {
		var lease *redis.IntCmd
		_, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			lease = p.ZRem(ctx, f.key("leases"), job.member)
			p.HDel(ctx, f.key("known"), job.jobID)
			return nil
		})
		return err == nil && lease.Val() == 1, err
	}
	due, next := int64(0), ""
	if !retryAt.IsZero() {
		due, next = max(retryAt.UnixMilli(), 1), job.jobID+"|"+strconv.Itoa(job.retried+1)
	}
	n, err := ackScript.Run(ctx, f.rdb,
		[]string{f.key("ring"), f.key("state"), f.key("leases"), f.key("known"), f.ready(job.owner), f.key("delayed")},
		job.member, job.owner, job.jobID, f.limit, f.channel, due, next).Int()
	return n == 1, err
}

// release gives job back to the front of its key's list; false when its
// lease was lost already.
func (f *fairQueue) release(ctx context.Context, job *fairJob) (bool, error) {
	entry := job.jobID
	if job.retried > 0 {
		entry += "|" + strconv.Itoa(job.retried)
	}
	n, err := releaseScript.Run(ctx, f.rdb,
		[]string{f.key("ring"), f.key("state"), f.key("leases"), f.ready(job.owner)},
		job.member, job.owner, entry, f.channel).Int()
	return n == 1, err
}

// extend renews the leases of members until now+lease; those lost are
// not renewed.
func (f *fairQueue) extend(ctx context.Context, members []string, lease time.Duration) error {
	if len(members) == 0 {
		return nil
	}
	deadline := float64(time.Now().Add(lease).UnixMilli())
	zs := make([]redis.Z, len(members))
	for i, m := range members {
		zs[i] = redis.Z{Score: deadline, Member: m}
	}
	return f.rdb.ZAddXX(ctx, f.key("leases"), zs...).Err()
}

// maintain moves due retries and jobs of lapsed leases back to their
// keys' lists.
func (f *fairQueue) maintain(ctx context.Context) (retries, recovered int, err error) {
	res, err := maintainScript.Run(ctx, f.rdb,
		[]string{f.key("ring"), f.key("state"), f.key("leases"), f.key("delayed")},
		time.Now().UnixMilli(), f.prefix+"ready:", f.limit, f.channel, fairMaintainBatch).Int64Slice()
	if err != nil || len(res) != 3 {
		return 0, 0, err
	}
	f.noTurns.Store(res[2] == 0)
	return int(res[0]), int(res[1]), nil
}

// known reports which of ids the dispatcher holds (queued, running or
// retrying).
func (f *fairQueue) known(ctx context.Context, ids []string) ([]bool, error) {
	vals, err := f.rdb.HMGet(ctx, f.key("known"), ids...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(ids))
	for i, v := range vals {
		out[i] = v != nil
	}
	return out, nil
}

// setKeyTurns sets one key's weight (its share of turns against other
// waiting keys; 1 when unset) and its limit of jobs running at once
// across the deployment (0: the default; negative: none).
func (f *fairQueue) setKeyTurns(ctx context.Context, owner string, weight float64, limit int) error {
	fields := map[string]any{}
	if weight > 0 {
		fields["w:"+owner] = weight
	}
	if limit != 0 {
		fields["c:"+owner] = limit
	}
	if len(fields) == 0 {
		return nil
	}
	f.noTurns.Store(false)
	return f.rdb.HSet(ctx, f.key("state"), fields).Err()
}

// FairSizes counts fair dispatch's compress jobs: Ready in their keys'
// lists, Running under a lease, Retrying until their retry is due.
type FairSizes struct{ Ready, Running, Retrying int64 }

// sizes reads FairSizes in one round trip.
func (f *fairQueue) sizes(ctx context.Context) (FairSizes, error) {
	var known, running, retrying *redis.IntCmd
	_, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		known = p.HLen(ctx, f.key("known"))
		running = p.ZCard(ctx, f.key("leases"))
		retrying = p.ZCard(ctx, f.key("delayed"))
		return nil
	})
	if err != nil {
		return FairSizes{}, err
	}
	s := FairSizes{Running: running.Val(), Retrying: retrying.Val()}
	s.Ready = max(known.Val()-s.Running-s.Retrying, 0)
	return s, nil
}

// parseEntry splits a ready entry into its job id and retries.
func parseEntry(entry string) (id string, retried int) {
	id, n, ok := strings.Cut(entry, "|")
	if ok {
		retried, _ = strconv.Atoi(n)
	}
	return id, retried
}

func leaseToken() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
