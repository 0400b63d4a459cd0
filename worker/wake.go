package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
	"github.com/imgflow/imgflow/internal/psloop"
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
	queue    asynqext.Queue // whose dequeue and forward scripts it watches
	maxWait  time.Duration
	signal   chan struct{} // a wake-up arrived (capacity 1)
	stop     chan struct{} // closed when the worker shuts down
	stopOnce sync.Once
	woken    atomic.Int64 // held dequeues a wake-up answered with a task (tests)
}

func newWaker(queue string, maxWait time.Duration) *waker {
	return &waker{
		queue:   asynqext.QueueOf(queue),
		maxWait: maxWait,
		signal:  make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
}

// listen forwards wake-ups from Redis to the hook until ctx ends.
func (w *waker) listen(ctx context.Context, rdb redis.UniversalClient, channel string) error {
	return forwardWakeups(ctx, rdb, channel, w.wake)
}

// forwardWakeups subscribes to channel and calls wake for each message
// until ctx ends; it returns once the subscription is confirmed, so that
// no wake-up published after it is missed.
func forwardWakeups(ctx context.Context, rdb redis.UniversalClient, channel string, wake func()) error {
	ps := rdb.Subscribe(ctx, channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return fmt.Errorf("subscribe %s: %w", channel, err)
	}
	// Received on one goroutine that wakes the waiter itself: go-redis's
	// Channel would put a goroutine hop or two before it (psloop).
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	go func() {
		defer stop()
		psloop.Run(ps, func(msg any) {
			if _, ok := msg.(*redis.Message); ok {
				wake()
			}
		})
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

// watches reports whether a script on keys is one the hook acts on:
// asynq's dequeue or forward on the waker's queue.
func (w *waker) watches(keys []string) bool {
	s := w.queue.ScriptOn(keys)
	return s == asynqext.Dequeue || s == asynqext.Forward
}

func (w *waker) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *waker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (w *waker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c, ok := cmd.(*redis.Cmd); ok {
			switch w.queue.ScriptOf(cmd) {
			case asynqext.Forward:
				return w.forward(ctx, next, c)
			case asynqext.Dequeue:
				return w.dequeue(ctx, next, c)
			}
		}
		return next(ctx, cmd)
	}
}

// forward runs asynq's forward script and wakes the waker when it moved
// tasks to the pending list.
func (w *waker) forward(ctx context.Context, next redis.ProcessHook, cmd *redis.Cmd) error {
	err := next(ctx, cmd)
	if err == nil && asynqext.Forwarded(cmd) > 0 {
		w.wake()
	}
	return err
}

// dequeue runs asynq's dequeue script and, while it finds nothing, holds
// it until a wake-up comes (then runs it again) or maxWait passes.
func (w *waker) dequeue(ctx context.Context, next redis.ProcessHook, cmd *redis.Cmd) error {
	// A wake-up from before this dequeue is answered by the dequeue
	// itself: its task was enqueued before the script runs.
	select {
	case <-w.signal:
	default:
	}
	err := next(ctx, cmd)
	if !asynqext.EmptyDequeue(err) {
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
		if !asynqext.EmptyDequeue(err) {
			cmd.SetVal(again.Val())
			cmd.SetErr(err)
			if err == nil {
				w.woken.Add(1)
			}
			return err
		}
	}
}
