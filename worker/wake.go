package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Wake-up on enqueue. asynq polls: an idle server runs its dequeue script,
// finds the queue empty and sleeps about TaskCheckInterval before it asks
// again, so a job that arrives at an idle worker waits half an interval on
// average, and a short interval costs Redis a script per poll all day.
//
// Instead, a Queue publishes on wakeChannel(queue) after every immediate
// enqueue, and the worker's Redis client holds an empty dequeue (a hook on
// asynq's own dequeue script) until such a message arrives or IdleWait
// passes, then runs it again. An idle worker thus polls once per IdleWait,
// and a new job starts as soon as its wake-up crosses Redis. Retries and
// delayed deliveries made due by this process's asynq (its forward script
// moved tasks) wake it too. A missed message (a reconnect, a task made due
// by another worker or enqueued by another program) costs at most
// IdleWait. asynq itself is unchanged: it sees a dequeue that took a while.

// DefaultIdleWait bounds how long an empty dequeue waits for a wake-up. It
// stays far below asynq's 30 s task lease, which the dequeue's caller
// computed before the wait.
const DefaultIdleWait = time.Second

// wakeChannel is the pub/sub channel of queue's wake-ups.
func wakeChannel(queue string) string { return "imgflow:wake:{" + queue + "}" }

// waker is the go-redis hook that holds asynq's empty dequeues of one queue.
type waker struct {
	pendingKey, pausedKey string
	maxWait               time.Duration
	signal                chan struct{} // a wake-up arrived (capacity 1)
	stop                  chan struct{} // closed when the worker shuts down
	stopOnce              sync.Once
	woken                 atomic.Int64 // held dequeues a wake-up answered with a task (tests)
}

func newWaker(queue string, maxWait time.Duration) *waker {
	return &waker{
		// asynq's key names (base.PendingKey, base.PausedKey): the first two
		// keys of its dequeue script. A test holds this hook to them.
		// Its forward script has the pending list as second key.
		pendingKey: "asynq:{" + queue + "}:pending",
		pausedKey:  "asynq:{" + queue + "}:paused",
		maxWait:    maxWait,
		signal:     make(chan struct{}, 1),
		stop:       make(chan struct{}),
	}
}

// listen forwards wake-ups from Redis to the hook until ctx ends.
func (w *waker) listen(ctx context.Context, rdb redis.UniversalClient, channel string) error {
	ps := rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return fmt.Errorf("subscribe %s: %w", channel, err)
	}
	go func() {
		defer ps.Close()
		msgs := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-msgs:
				w.wake()
			}
		}
	}()
	return nil
}

func (w *waker) wake() {
	select {
	case w.signal <- struct{}{}:
	default: // one pending wake-up is enough: the dequeue runs again anyway
	}
}

// shutdown releases a held dequeue and stops holding new ones, so that
// asynq's own shutdown does not wait for IdleWait.
func (w *waker) shutdown() { w.stopOnce.Do(func() { close(w.stop) }) }

// isDequeue reports whether cmd is asynq's dequeue script on our queue:
// EVALSHA/EVAL sha-or-body 4 pending paused active lease ...
func (w *waker) isDequeue(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 5 || (cmd.Name() != "evalsha" && cmd.Name() != "eval") {
		return false
	}
	return fmt.Sprint(args[2]) == "4" && args[3] == w.pendingKey && args[4] == w.pausedKey
}

// isForward reports whether cmd is asynq's script that moves due retries
// and delayed tasks to our pending list: EVALSHA/EVAL sha-or-body 2 from
// pending ...
func (w *waker) isForward(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 5 || (cmd.Name() != "evalsha" && cmd.Name() != "eval") {
		return false
	}
	return fmt.Sprint(args[2]) == "2" && args[4] == w.pendingKey
}

// watches reports whether a script on keys is one the hook acts on (the
// dequeue or the forward), by the keys isDequeue and isForward look at.
func (w *waker) watches(keys []string) bool {
	dequeue := len(keys) == 4 && keys[0] == w.pendingKey && keys[1] == w.pausedKey
	forward := len(keys) == 2 && keys[1] == w.pendingKey
	return dequeue || forward
}

func (w *waker) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *waker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (w *waker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		orig, ok := cmd.(*redis.Cmd)
		if ok && w.isForward(cmd) {
			err := next(ctx, cmd)
			if n, _ := orig.Int64(); err == nil && n > 0 {
				w.wake()
			}
			return err
		}
		if !ok || !w.isDequeue(cmd) {
			return next(ctx, cmd)
		}
		// A wake-up from before this dequeue is answered by the dequeue
		// itself: its task was enqueued before the script runs.
		select {
		case <-w.signal:
		default:
		}
		err := next(ctx, cmd)
		if err != redis.Nil {
			return err // a task, or an error for asynq to handle
		}
		timer := time.NewTimer(w.maxWait)
		defer timer.Stop()
		for {
			select {
			case <-w.signal:
			case <-timer.C:
				return err // asynq sleeps TaskCheckInterval, then asks again
			case <-w.stop:
				return err
			}
			again := redis.NewCmd(ctx, cmd.Args()...)
			err = next(ctx, again)
			if err != redis.Nil {
				orig.SetVal(again.Val())
				orig.SetErr(err)
				if err == nil {
					w.woken.Add(1)
				}
				return err
			}
		}
	}
}
