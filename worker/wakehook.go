package worker

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
)

// A wake-up rides in its enqueue's round trip: the Queue marks the context
// of an enqueue it wants workers woken for (withWakeUp), and its go-redis
// hook on its client sends asynq's enqueue script (asynqext.Enqueue) and
// the PUBLISH together, in one pipeline, so Redis runs the PUBLISH right
// after the enqueue. Should the hook not see the enqueue (asynq given a
// different client), the Queue publishes as before (wakeUps): the slot says
// whether the hook sent it. On an autopipeliner (redisstore.Batched) the
// enqueue is on its ordered stream before the hook runs, so the hook lets
// it go and sends the PUBLISH right behind it, without waiting for the
// enqueue's reply first.

// wakeSlot is one enqueue's request for a wake-up.
type wakeSlot struct {
	hook    *enqueueWaker  // the Queue's hook, the only one that sends it
	queue   asynqext.Queue // where the enqueue puts the task
	channel string
	sent    bool // the hook published it with the enqueue
}

type wakeSlotKey struct{}

func withWakeUp(ctx context.Context, hook *enqueueWaker, queue asynqext.Queue, channel string) (context.Context, *wakeSlot) {
	slot := &wakeSlot{hook: hook, queue: queue, channel: channel}
	return context.WithValue(ctx, wakeSlotKey{}, slot), slot
}

// enqueueWaker is a Queue's hook on its client, added by NewQueue. It
// sends only the wake-ups of its own Queue's enqueues, so that Queues
// sharing a client, each with its hook, publish each wake-up once, and
// nothing needs to remember which clients carry a hook.
type enqueueWaker struct{ rdb redis.UniversalClient }

func (h *enqueueWaker) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *enqueueWaker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *enqueueWaker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		slot, ok := ctx.Value(wakeSlotKey{}).(*wakeSlot)
		if !ok || slot.hook != h || slot.queue.ScriptOf(cmd) != asynqext.Enqueue {
			return next(ctx, cmd)
		}
		if _, batched := h.rdb.(*redis.AutoPipeliner); batched {
			// An autopipeliner has put cmd on its ordered stream before
			// this hook runs: a PUBLISH sent now follows it there, and
			// the two replies are awaited together, not one after the
			// other.
			published := make(chan bool, 1)
			go func() { published <- h.rdb.Publish(ctx, slot.channel, "").Err() == nil }()
			err := next(ctx, cmd)
			slot.sent = <-published
			return err
		}
		// A NOSCRIPT EVALSHA publishes too, before asynq's EVAL: a spurious
		// wake-up, and the EVAL's own PUBLISH follows its enqueue.
		_, _ = h.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Process(ctx, cmd)
			p.Publish(ctx, slot.channel, "")
			return nil
		})
		slot.sent = true
		return cmd.Err()
	}
}
