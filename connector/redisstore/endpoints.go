package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

// endpoint:{id} is a hash of one endpoint's state (connector.EndpointState),
// all times in unix milliseconds, living JobTTL from its last write:
//
//	failing_since  first failed attempt of the current run of failures
//	paused_until   the receiver's Retry-After, for every message
//	disabled_at    set once disabled (callback endpoints; a hook's is on the hook)
//	reason         why it was disabled
//	tat            the rate limit's next free slot (GCRA's theoretical arrival time)
//	credits_low    set while an account.credits_low hook's balance is at or below its threshold

// Endpoint returns the endpoint's state; the zero state for one never seen.
func (s *Hooks) Endpoint(ctx context.Context, id string) (connector.EndpointState, error) {
	r, err := s.rdb.HMGet(ctx, s.keys.endpoint(id), "failing_since", "paused_until", "disabled_at", "reason").Result()
	if err != nil {
		return connector.EndpointState{}, storageErr(err)
	}
	return endpointState(r), nil
}

func endpointState(r []any) connector.EndpointState {
	ms := func(v any) time.Time {
		var n int64
		switch v := v.(type) {
		case string:
			n, _ = strconv.ParseInt(v, 10, 64)
		case int64:
			n = v
		}
		if n <= 0 {
			return time.Time{}
		}
		return time.UnixMilli(n).UTC()
	}
	st := connector.EndpointState{FailingSince: ms(r[0]), PausedUntil: ms(r[1]), DisabledAt: ms(r[2])}
	st.DisabledReason, _ = r[3].(string)
	return st
}

// takeSlotScript is GCRA over the endpoint's tat field. ARGV: now (ms),
// interval between slots (ms, fractional), burst tolerance (ms), the
// longest wait the caller takes (ms), TTL (ms). Returns {reserved, wait ms}.
var takeSlotScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local tat = tonumber(redis.call('HGET', KEYS[1], 'tat') or '0')
if tat < now then tat = now end
local wait = tat - tonumber(ARGV[3]) - now
if wait < 0 then wait = 0 end
if wait > tonumber(ARGV[4]) then return {0, math.ceil(wait)} end
redis.call('HSET', KEYS[1], 'tat', tostring(tat + tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, math.ceil(wait)}
`)

// TakeSlot reserves the endpoint's next delivery slot under rate if it
// comes within maxWait (generic cell rate algorithm without burst: slots
// 1/rate apart, so a receiver never sees more than rate in a second).
func (s *Hooks) TakeSlot(ctx context.Context, id string, rate float64, maxWait time.Duration) (time.Duration, bool, error) {
	if rate <= 0 {
		return 0, true, nil
	}
	interval := 1000 / rate
	const burst = 0.0
	r, err := takeSlotScript.Run(ctx, s.rdb, []string{s.keys.endpoint(id)}, s.now().UnixMilli(),
		strconv.FormatFloat(interval, 'f', 3, 64), strconv.FormatFloat(burst, 'f', 3, 64),
		maxWait.Milliseconds(), s.jobTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, false, storageErr(err)
	}
	return time.Duration(r[1]) * time.Millisecond, r[0] == 1, nil
}

// admitEndpointScript reads the endpoint's state and, when ARGV[5] is 1 and the
// endpoint is neither disabled nor paused at ARGV[1], takes a slot as
// takeSlotScript does (no burst). Returns failing_since, paused_until,
// disabled_at, reason, reserved (0/1), wait (ms).
var admitEndpointScript = redis.NewScript(`
local st = redis.call('HMGET', KEYS[1], 'failing_since', 'paused_until', 'disabled_at', 'reason', 'tat')
local now = tonumber(ARGV[1])
local wait, reserved = 0, 0
if ARGV[5] == '1' and not st[3] and tonumber(st[2] or '0') <= now then
  local tat = tonumber(st[5] or '0')
  if tat < now then tat = now end
  wait = tat - now
  if wait <= tonumber(ARGV[3]) then
    redis.call('HSET', KEYS[1], 'tat', tostring(tat + tonumber(ARGV[2])))
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    reserved = 1
  end
end
return {st[1], st[2], st[3], st[4], reserved, math.ceil(wait)}
`)

// AdmitEndpoint reads the endpoint's state and takes its next rate slot
// (within maxWait) unless it is disabled or paused or rate <= 0, in one
// round trip.
func (s *Hooks) AdmitEndpoint(ctx context.Context, id string, rate float64, maxWait time.Duration) (connector.EndpointState, time.Duration, bool, error) {
	reserve, interval := "0", 0.0
	if rate > 0 {
		reserve, interval = "1", 1000/rate
	}
	r, err := admitEndpointScript.Run(ctx, s.rdb, []string{s.keys.endpoint(id)}, s.now().UnixMilli(),
		strconv.FormatFloat(interval, 'f', 3, 64), maxWait.Milliseconds(), s.jobTTL.Milliseconds(), reserve).Slice()
	if err != nil {
		return connector.EndpointState{}, 0, false, storageErr(err)
	}
	if len(r) != 6 {
		return connector.EndpointState{}, 0, false, internalErr(errors.New("admit endpoint: unexpected answer"))
	}
	reserved, _ := r[4].(int64)
	wait, _ := r[5].(int64)
	return endpointState(r[:4]), time.Duration(wait) * time.Millisecond, reserved == 1 || rate <= 0, nil
}

// endpointFailedScript records a failure at ARGV[1] (ms), pauses until
// ARGV[2] (ms, 0: no pause) unless paused longer, keeps the hash ARGV[3]
// ms, and returns the state's fields.
var endpointFailedScript = redis.NewScript(`
redis.call('HSETNX', KEYS[1], 'failing_since', ARGV[1])
local pause = tonumber(ARGV[2])
if pause > 0 and pause > tonumber(redis.call('HGET', KEYS[1], 'paused_until') or '0') then
  redis.call('HSET', KEYS[1], 'paused_until', ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('HMGET', KEYS[1], 'failing_since', 'paused_until', 'disabled_at', 'reason')
`)

// EndpointFailed records a failed attempt at now, pausing the endpoint for
// retryAfter when it is positive, and returns the state.
func (s *Hooks) EndpointFailed(ctx context.Context, id string, now time.Time, retryAfter time.Duration) (connector.EndpointState, error) {
	var until int64
	if retryAfter > 0 {
		// Rounded up to the stored millisecond: truncating would end the
		// pause up to 1 ms before the receiver's Retry-After.
		until = now.Add(retryAfter + time.Millisecond - time.Nanosecond).UnixMilli()
	}
	r, err := endpointFailedScript.Run(ctx, s.rdb, []string{s.keys.endpoint(id)}, now.UnixMilli(), until, s.jobTTL.Milliseconds()).Slice()
	if err != nil {
		return connector.EndpointState{}, storageErr(err)
	}
	if len(r) != 4 {
		return connector.EndpointState{}, internalErr(errors.New("endpoint state: unexpected answer"))
	}
	return endpointState(r), nil
}

// EndpointSucceeded ends the endpoint's run of failures and any disabling
// (a receiver that answers 2xx works).
func (s *Hooks) EndpointSucceeded(ctx context.Context, id string) error {
	return storageErr(s.rdb.HDel(ctx, s.keys.endpoint(id), "failing_since", "disabled_at", "reason").Err())
}

// disableEndpointScript sets disabled_at ARGV[1] and reason ARGV[2] unless
// disabled_at is set; 1 when it changed.
var disableEndpointScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'disabled_at', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'reason', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// DisableEndpoint marks the endpoint disabled; changed is false when it
// already was.
func (s *Hooks) DisableEndpoint(ctx context.Context, id, reason string, at time.Time) (bool, error) {
	n, err := disableEndpointScript.Run(ctx, s.rdb, []string{s.keys.endpoint(id)}, at.UnixMilli(), reason, s.jobTTL.Milliseconds()).Int()
	if err != nil {
		return false, storageErr(err)
	}
	return n == 1, nil
}

// ResetEndpoint forgets the endpoint's failures, pause and disabling; its
// rate slot stays.
func (s *Hooks) ResetEndpoint(ctx context.Context, id string) error {
	return storageErr(s.rdb.HDel(ctx, s.keys.endpoint(id), "failing_since", "paused_until", "disabled_at", "reason").Err())
}

// MarkCreditsLow sets or clears the endpoint's credits_low field; crossed
// when it was set now.
func (s *Hooks) MarkCreditsLow(ctx context.Context, id string, low bool) (bool, error) {
	key := s.keys.endpoint(id)
	if !low {
		return false, storageErr(s.rdb.HDel(ctx, key, "credits_low").Err())
	}
	var set *redis.BoolCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, key, "credits_low", 1)
		p.PExpire(ctx, key, s.jobTTL)
		return nil
	})
	if err != nil {
		return false, storageErr(err)
	}
	return set.Val(), nil
}
