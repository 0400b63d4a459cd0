package redisstore

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Lua scripts, each over the keys of one hash slot so that they run on a
// Redis Cluster too. go-redis sends EVALSHA and falls back to EVAL once
// when the server does not know the script yet.

// casScript replaces a record only if it is still the one the caller saw
// (compared by SHA-1, so the old bytes need not travel), keeps its expiry,
// and publishes the new record when asked: one round trip where WATCH, GET
// and MULTI/SET/EXEC took three. When the record differs it answers with
// the current one, so the caller can retry without another read.
//
// KEYS[1] record, KEYS[2...] keys to delete once written (a finished
// job's input); ARGV[1] SHA-1 hex of the value seen; ARGV[2] new value;
// ARGV[3] channel to publish the new value on, "" for none.
// Returns 1 when written, -1 when the record is gone, else the record.
var casScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if redis.sha1hex(cur) ~= ARGV[1] then return cur end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
if #KEYS > 1 then redis.call('DEL', unpack(KEYS, 2)) end
if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], ARGV[2]) end
return 1
`)

// endJobScript is casScript for a write that ends a job: it publishes the
// new record, deletes the job's input, and, asked to, refuses a failure
// while the job's call record keeps a charged answer (a stale run kept it
// after this run began), so that the answer is never dropped.
//
// KEYS[1] record, KEYS[2] call record, KEYS[3...] keys to delete once
// written; ARGV[1] SHA-1 hex of the value seen; ARGV[2] new value; ARGV[3]
// channel to publish on; ARGV[4] "1" to refuse when an answer is kept.
// Returns 1 when written, -1 when the record is gone, -2 when refused for
// the kept answer, else the current record.
var endJobScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if redis.sha1hex(cur) ~= ARGV[1] then return cur end
if ARGV[4] == '1' and redis.call('HEXISTS', KEYS[2], 'kept') == 1 then return -2 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
if #KEYS > 2 then redis.call('DEL', unpack(KEYS, 3)) end
if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], ARGV[2]) end
return 1
`)

// completeIdemScript writes the job id into a pending idempotency record
// and gives it its 24-hour life, counted from the reservation, when the
// completing request still holds the key: its lease holds ARGV[4], or no
// request holds it and the record names no job yet (the lease lapsed and
// nobody took the key over). One round trip where WATCH, GET and
// MULTI/SET/EXEC took three. GETDEL reads and drops the lease in one
// command; a lease of another request is put back (for a full lease: its
// holder renews it anyway).
//
// KEYS[1] record, KEYS[2] its in-flight lease (same slot); ARGV[1] job id;
// ARGV[2] now in Unix ms; ARGV[3] IdempotencyTTL in ms; ARGV[4] the
// request's lease token; ARGV[5] the lease in ms. Returns 1 when recorded
// (or recorded before with this job id), 0 when the record is gone, -1
// when the key is another request's.
var completeIdemScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local lease = redis.call('GETDEL', KEYS[2])
if not cur then
  if lease then redis.call('SET', KEYS[2], lease, 'PX', ARGV[5]) end
  return 0
end
local rec = cjson.decode(cur)
if lease ~= ARGV[4] then
  if lease then
    redis.call('SET', KEYS[2], lease, 'PX', ARGV[5])
    return -1
  end
  if rec.job_id == ARGV[1] then return 1 end
  if rec.job_id and rec.job_id ~= '' then return -1 end
end
rec.job_id = ARGV[1]
local now = tonumber(ARGV[2])
local at = (tonumber(rec.reserved_ms) or 0) + tonumber(ARGV[3])
if at <= now then at = now + tonumber(ARGV[3]) end
redis.call('SET', KEYS[1], cjson.encode(rec), 'PXAT', at)
return 1
`)

// releaseIdemScript forgets a pending idempotency record and its lease
// when the lease still holds the releasing request's token: a request
// that lost its lease must not free the key of the request that took it
// over. A completed record (job id set) is kept.
//
// KEYS[1] record, KEYS[2] its lease (same slot); ARGV[1] the token.
// Returns 1 when released, 0 otherwise.
var releaseIdemScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur then
  local rec = cjson.decode(cur)
  if rec.job_id and rec.job_id ~= '' then return 0 end
end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`)

// pipelinedScripts sends the commands queue adds (scripts as EVALSHA) in one
// pipeline, one round trip. When Redis did not know a script (NOSCRIPT: the
// first use, a restart or SCRIPT FLUSH), it loads the scripts and sends
// again only the commands that failed so: the others ran, and some (SET NX)
// must not run twice.
func (s *base) pipelinedScripts(ctx context.Context, queue func(p redis.Pipeliner)) ([]redis.Cmder, error) {
	return s.pipelinedScriptsOn(ctx, s.rdb, queue)
}

// pipelinedScriptsOn is pipelinedScripts on client c (see clientFor).
func (s *base) pipelinedScriptsOn(ctx context.Context, c redis.UniversalClient, queue func(p redis.Pipeliner)) ([]redis.Cmder, error) {
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
	var again []redis.Cmder
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && strings.HasPrefix(cerr.Error(), "NOSCRIPT") {
			again = append(again, c)
		}
	}
	if len(again) == 0 {
		return cmds, err
	}
	for _, sc := range allScripts {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return cmds, err
		}
	}
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, cmd := range again {
			cmd.SetErr(nil)
			p.Process(ctx, cmd)
		}
		return nil
	})
	for _, c := range cmds {
		if err == nil {
			err = c.Err()
		}
	}
	return cmds, err
}

// allScripts are the scripts pipelinedScripts may have to load.
var allScripts = []*redis.Script{casScript, endJobScript, answerCallScript, admitAndListScript, recordAttemptScript, commitStagedScript}
