package redisstore

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// A key's budget of free failures (connector/failbudget.go) is a generic
// cell rate kept as one member of its in-flight set, failuresMember,
// scored by its theoretical arrival time (tat, Unix ms): each free failure
// moves it one interval (an hour ÷ FreeFailuresPerHour) past max(tat,
// now), each paid job moves it one interval back. A new job is refused
// while tat is more than the window less one interval ahead of now. Being
// in the in-flight set, admission reads it with the job's own place (one
// ZMSCORE where a ZSCORE was) and its pruning of places past their
// deadline drops a tat that has fallen behind now (a budget at full): the
// budget costs a job's making no Redis command and no round trip.

// failuresMember is the budget's member of the in-flight set; job ids never
// start with "~".
const failuresMember = "~failures"

// failureWindow is the budget's window: a burst of FreeFailuresPerHour
// failures fills it.
const failureWindow = time.Hour

// failureInterval is one failure's share of the window in ms; 0 when the
// budget is off.
func (s *Jobs) failureInterval() int64 {
	if s.freeFailuresPerHour <= 0 {
		return 0
	}
	return failureWindow.Milliseconds() / int64(s.freeFailuresPerHour)
}

// failureArgs are the admission scripts' budget arguments: the window and
// one interval in ms (0 0: no budget).
func (s *Jobs) failureArgs() (int64, int64) {
	if s.freeFailuresPerHour <= 0 {
		return 0, 0
	}
	return failureWindow.Milliseconds(), s.failureInterval()
}

// failBudgetRefusal is the answer to a key over its budget, wait ms until
// one more failure fits.
func (s *Jobs) failBudgetRefusal(waitMs int64) error {
	retry := max(time.Duration(waitMs)*time.Millisecond, time.Second)
	retry = time.Duration(math.Ceil(retry.Seconds())) * time.Second
	return &connector.Error{Code: connector.EFAILBUDGET, RetryAfter: retry,
		Message: "this key's jobs failed uncharged " + strconv.Itoa(s.freeFailuresPerHour) +
			" times lately (IMGFLOW_FREE_FAILURES_PER_HOUR, a burst and then that many an hour; each paid job earns one back): " +
			"check the failed jobs' errors, and retry after Retry-After seconds"}
}

// spendFailureScript counts one free failure: the tat moves one interval
// past max(tat, now), and the set lives at least until it.
//
// KEYS[1] inflight set; ARGV[1] now (Unix ms); ARGV[2] interval (ms).
var spendFailureScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local tat = tonumber(redis.call('ZSCORE', KEYS[1], '` + failuresMember + `') or now)
tat = math.max(tat, now) + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], tat, '` + failuresMember + `')
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 or now + ttl < tat then redis.call('PEXPIREAT', KEYS[1], tat) end
return tat
`)

// spendFailure counts job's free failure against its owner's budget.
func (s *Jobs) spendFailure(ctx context.Context, owner string) error {
	interval := s.failureInterval()
	if interval == 0 || owner == "" {
		return nil
	}
	return storageErr(spendFailureScript.Run(ctx, s.rdb, []string{s.keys.inflight(owner)}, s.now().UnixMilli(), interval).Err())
}

// earnFailure gives one free failure back for a paid job, in p: only to a
// budget that has some spent (XX: a key with none gets no member), and a
// tat moved behind now is pruned at the key's next admission.
func (s *Jobs) earnFailure(ctx context.Context, p redis.Pipeliner, owner string) {
	interval := s.failureInterval()
	if interval == 0 || owner == "" {
		return
	}
	p.ZAddArgsIncr(ctx, s.keys.inflight(owner), redis.ZAddArgs{XX: true,
		Members: []redis.Z{{Score: -float64(interval), Member: failuresMember}}})
}
