package worker

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

// Fair shares of the compress workers. Every compress task shares one FIFO
// queue, so a key that queues a thousand slow items (a batch of URLs that
// answer after 10 s) would hold every worker and stall every other key's
// job behind them (99 s for a job that takes 20 ms). Instead, a
// key runs at most KeyShare compress tasks at once across the deployment:
// a task of a key at its share is not run but parked, put back by asynq as
// a retry that does not count (IsFailure is false for errWaitingForShare)
// and comes back after a short delay, while the workers go on to the next
// task in the queue, another key's. So another key's job waits at most for
// the tasks ahead of it that are under their keys' shares, never for a
// flood. Compress tasks are counted in each process (localShare: no Redis
// on a job's path), and a key's share there shrinks with the number of
// keys running or waiting (localShare), so that two or ten flooding keys
// leave a worker free for another key; deliveries across the deployment,
// in Redis, at a fixed share. The fetch of an image URL is a step of its
// compress task, so a slow fetch holds a place in its key's share.
//
// The running deliveries of each key are a sorted set in Redis (member:
// task id, score: the lease's end, by Redis's clock), decided by one
// script; compress tasks are counted in memory (localShare) alike. A
// task is admitted if it holds a place already (a re-run after a crash is
// not counted twice) or the set, without expired leases, has room. A
// worker that dies leaves its place to expire after the task's timeout;
// nothing else is lost: a parked task is an ordinary asynq retry, kept in
// Redis, that any worker runs later. Parking happens before the job is
// touched, so it is never charged for. A task on its last allowed retry is
// not parked (asynq would archive it, not retry it): it runs over the
// share, once.

// errWaitingForShare parks a task whose key runs its share already.
var errWaitingForShare = errors.New("waiting for a place in its key's share of the workers")

// Leases: how long a place is held without its task's end: past the
// task's own timeout, after which asynq has given up on it anyway.
const (
	shareLease         = compressTimeout + 30*time.Second
	deliveryShareLease = deliveryTimeout + 30*time.Second
)

// Parking delays: a parked task comes back after parkBase, stretched by
// how many of its key's tasks wait (they can only run one share at a
// time, so polling faster would only cost Redis), at most parkMax; with
// a fifth of jitter so that they do not come back together.
const (
	parkBase = time.Second
	parkMax  = 15 * time.Second
)

// admitScript: KEYS[1] the key's running set, KEYS[2] its waiting set;
// ARGV job id, share, lease (ms). Returns {admitted 0/1, waiting}.
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 10 * lease)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('ZREM', KEYS[2], ARGV[1])
  return {1, redis.call('ZCARD', KEYS[2])}
end
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('PEXPIRE', KEYS[2], 10 * lease)
return {0, redis.call('ZCARD', KEYS[2])}
`)

// owners remembers the owners of jobs whose tasks were parked here, so
// that a parked task coming back costs no read of its job: a flood's tasks
// are parked again and again while they wait. Bounded: forgotten whole
// when full (a forgotten owner is read again).
type owners struct {
	mu sync.Mutex
	m  map[string]string
}

const maxOwners = 100_000

func (o *owners) get(jobID string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[jobID]
}

func (o *owners) put(jobID, owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m) >= maxOwners {
		o.m = make(map[string]string)
	}
	o.m[jobID] = owner
}

func (o *owners) forget(jobID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, jobID)
}

// fairShare admits tasks within each key's share: in Redis across the
// deployment (deliveries), or in this process alone (compress tasks: local).
type fairShare struct {
	// local, when set, decides in this process, without Redis: a compress
	// task's admission must cost its job nothing (BENCHMARK.md: a Redis
	// round trip is the unit of a job's cost), and the bound it gives holds
	// per process, so across every process of the deployment.
	local  *localShare
	rdb    redis.UniversalClient
	prefix string        // "imgflow:share:{queue}:"
	share  int           // <= 0: no share (every task admitted)
	lease  time.Duration // how long a place is held without its task's end
	// parkBase scales the parking delay; tests shorten it.
	parkBase time.Duration
	parked   owners // owners of the tasks parked by this process
}

func (f *fairShare) keys(owner string) []string {
	return []string{f.prefix + owner + ":running", f.prefix + owner + ":waiting"}
}

// wrap runs next for a task only within its key's share, and gives the
// place back when next returns. identify names the task's place (its job
// id, or a delivery's task id) and finds its key's owner ("" admits it:
// the handler deals with a task it cannot place).
func (f *fairShare) wrap(next asynq.HandlerFunc, identify func(ctx context.Context, t *asynq.Task) (member string, owner func() string)) asynq.HandlerFunc {
	if f.share <= 0 {
		return next
	}
	return func(ctx context.Context, t *asynq.Task) error {
		member, lookup := identify(ctx, t)
		if member == "" {
			return next(ctx, t)
		}
		owner := f.parked.get(member)
		if owner == "" {
			owner = lookup()
		}
		if owner == "" {
			return next(ctx, t)
		}
		if f.local != nil {
			return f.runLocal(ctx, t, next, member, owner)
		}
		keys := f.keys(owner)
		r, err := admitScript.Run(ctx, f.rdb, keys, member, f.share, f.lease.Milliseconds()).Int64Slice()
		if err != nil {
			return next(ctx, t) // Redis trouble: fail open; the handler meets it too
		}
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		if r[0] == 0 && retried < maxRetry {
			f.parked.put(member, owner)
			return &waitingError{waiting: int(r[1]), delay: f.parkDelay(int(r[1]))}
		}
		f.parked.forget(member)
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			f.rdb.ZRem(ctx, keys[0], member)
		}()
		return next(ctx, t)
	}
}

// runLocal runs next for a task if its key runs fewer than share tasks in
// this process, else parks it (unless on its last retry).
func (f *fairShare) runLocal(ctx context.Context, t *asynq.Task, next asynq.HandlerFunc, member, owner string) error {
	running, ok := f.local.take(owner, f.share)
	if !ok {
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		if retried < maxRetry {
			f.parked.put(member, owner)
			return &waitingError{waiting: running, delay: f.parkDelay(running)}
		}
		f.local.takeOver(owner)
	}
	f.parked.forget(member)
	defer f.local.release(owner)
	return next(ctx, t)
}

// localShare counts each key's running tasks in this process, and the
// keys whose tasks wait here. A key's share shrinks with the number of
// keys running or waiting (k, its own included):
//
//	share(k) = max(1, min(KeyShare, floor((workers - 1) / k)))
//
// so one key alone runs KeyShare (default workers - 1), and two or more
// keys hold at most workers - 1 between them while k < workers: a worker
// stays free for another key's task, and a running key's next task waits
// until its count is under the smaller share. Past workers - 1 keys, each
// runs one at a time, in turn.
type localShare struct {
	workers int // the process's compress concurrency; 0: no shrinking
	mu      sync.Mutex
	running map[string]int
	waiting map[string]time.Time // keys refused lately, by when
}

// waitingFor is how long a refused key counts as waiting: its parked
// tasks come back within parkMax.
const waitingFor = 2 * parkMax

// shareFor is share(k) for owner (l.mu held).
func (l *localShare) shareFor(owner string, share int, now time.Time) int {
	if l.workers <= 0 {
		return share
	}
	k := len(l.running)
	if _, ok := l.running[owner]; !ok {
		k++
	}
	for o, at := range l.waiting {
		if now.Sub(at) > waitingFor {
			delete(l.waiting, o)
			continue
		}
		if _, ok := l.running[o]; !ok && o != owner {
			k++
		}
	}
	return max(1, min(share, (l.workers-1)/k))
}

// take counts a task of owner in if owner runs fewer than its share; it
// says how many owner runs.
func (l *localShare) take(owner string, share int) (running int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running == nil {
		l.running = make(map[string]int)
		l.waiting = make(map[string]time.Time)
	}
	now := time.Now()
	n := l.running[owner]
	if n >= l.shareFor(owner, share, now) {
		l.waiting[owner] = now
		return n, false
	}
	l.running[owner] = n + 1
	return n + 1, true
}

// takeOver counts in a task that runs over the share (its last retry).
func (l *localShare) takeOver(owner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[owner]++
	delete(l.waiting, owner)
}

func (l *localShare) release(owner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[owner] <= 1 {
		delete(l.running, owner)
		return
	}
	l.running[owner]--
}

// placeCompress places a compress task by its job id, under the owner its
// payload names (read from the job for a task queued without it).
func placeCompress(jobOwner func(ctx context.Context, jobID string) string) func(context.Context, *asynq.Task) (string, func() string) {
	return func(ctx context.Context, t *asynq.Task) (string, func() string) {
		var p compressPayload
		if json.Unmarshal(t.Payload(), &p) != nil || p.JobID == "" {
			return "", nil // its handler drops it
		}
		if p.Owner != "" {
			return p.JobID, func() string { return p.Owner }
		}
		return p.JobID, func() string { return jobOwner(ctx, p.JobID) }
	}
}

// placeDelivery places a delivery by its task id, under the owner it
// carries (every delivery does: a job's, a batch's, a stored event's), or
// that of its job for one queued without it; a delivery of neither is not
// placed.
func placeDelivery(owner func(ctx context.Context, jobID string) string) func(context.Context, *asynq.Task) (string, func() string) {
	return func(ctx context.Context, t *asynq.Task) (string, func() string) {
		var d connector.Delivery
		id, _ := asynq.GetTaskID(ctx)
		if json.Unmarshal(t.Payload(), &d) != nil || id == "" {
			return "", nil
		}
		if d.Owner != "" {
			return id, func() string { return d.Owner }
		}
		if d.JobID == "" {
			return "", nil
		}
		return id, func() string { return owner(ctx, d.JobID) }
	}
}

// parkDelay is how long a parked task waits before it is tried again.
// waiting is how many of its key's tasks wait, itself included (read by
// delay from the error).
func (f *fairShare) parkDelay(waiting int) time.Duration {
	d := f.parkBase * time.Duration(max(1, waiting/max(1, 4*f.share)))
	d = min(d, parkMax/parkBase*f.parkBase)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// waitingError is errWaitingForShare with the key's count of waiting
// tasks and the delay that follows from it.
type waitingError struct {
	waiting int
	delay   time.Duration
}

func (e *waitingError) Error() string {
	return errWaitingForShare.Error() + " (" + strconv.Itoa(e.waiting) + " of its key's tasks wait)"
}
func (e *waitingError) Unwrap() error { return errWaitingForShare }

// isFailure is the servers' asynq IsFailure: a parked task is not a
// failure, so its retry count stays.
func isFailure(err error) bool { return !errors.Is(err, errWaitingForShare) }
