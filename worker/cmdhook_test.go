package worker

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// onCommand is a go-redis hook that shows fn every command a client sends,
// alone or in a pipeline, before it is sent.
type onCommand func(redis.Cmder)

func (f onCommand) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f onCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { f(cmd); return next(ctx, cmd) }
}
func (f onCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			f(cmd)
		}
		return next(ctx, cmds)
	}
}
