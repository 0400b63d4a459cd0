package redisstore

// Lua shared by the scripts that change a job's record and its call
// record (jobs.go, calls.go, finishkept.go): each script is its steps in
// order, so a step's rules live once. The fragments use KEYS[1] for the
// job's record and ARGV[1] for the SHA-1 hex of the record the caller saw.

// luaRecordUnchanged opens a compare-and-set of the job's record: it
// returns -1 when the record is gone and the current record when it is
// not the one seen (so the caller retries without another read); past it,
// the record is unchanged.
const luaRecordUnchanged = `
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if redis.sha1hex(cur) ~= ARGV[1] then return cur end
`

// luaWriteRecord defines writeRecord(new, channel, from, to): the record
// becomes new (its expiry kept), KEYS[from..to] are deleted (none when to
// < from), and new is published on channel unless it is "".
const luaWriteRecord = `
local function writeRecord(new, channel, from, to)
  redis.call('SET', KEYS[1], new, 'KEEPTTL')
  if to >= from then redis.call('DEL', unpack(KEYS, from, to)) end
  if channel ~= '' then redis.call('PUBLISH', channel, new) end
end
`

// luaBeginCall defines beginCall(calls, ttl, mark): on the call record
// calls, it counts a call begun, marks it open (mark, "RUN UNTIL"),
// renews the record's expiry (ttl ms) and returns {calls, answered, kept}.
const luaBeginCall = `
local function beginCall(rec, ttl, mark)
  local r = redis.call('HMGET', rec, 'calls', 'answered', 'kept')
  local calls = (tonumber(r[1]) or 0) + 1
  redis.call('HSET', rec, 'calls', calls, 'open:' .. calls, mark)
  redis.call('PEXPIRE', rec, ttl)
  return {calls, r[2] or '0', r[3] or ''}
end
`

// luaAnswerCall defines answerCall(calls, call, kept): on the call record
// calls, call number call is answered (no longer open), counted once
// however often it is recorded (last), and kept is kept as the charged
// answer unless it is "". False when there is no call record.
const luaAnswerCall = `
local function answerCall(rec, call, kept)
  local r = redis.call('HMGET', rec, 'calls', 'last', 'answered')
  if not r[1] then return false end
  local set = {'open:' .. call, '0 0'}
  if r[2] ~= call then
    set = {'open:' .. call, '0 0', 'answered', (tonumber(r[3]) or 0) + 1, 'last', call}
  end
  if kept ~= '' then table.insert(set, 'kept'); table.insert(set, kept) end
  redis.call('HSET', rec, unpack(set))
  return true
end
`
