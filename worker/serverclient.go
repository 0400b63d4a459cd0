package worker

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// serverClient is the client asynq's server runs on. Its dequeue and
// forward scripts go to the client that carries the waker's hook (wake.go),
// which may hold a dequeue until a wake-up comes and must see the forward's
// answer; everything else the server sends (completing tasks, leases,
// heartbeats) goes through the autopipeliner of that client, so that tasks
// finishing at the same moment share writes instead of a round trip each.
type serverClient struct {
	*redis.AutoPipeliner
	direct redis.UniversalClient
	wk     *waker
}

// asynqServerClient is the client for asynq's server over rdb (hooked by
// wk): a serverClient, or rdb itself when it has no autopipeliner (a
// cluster client).
func asynqServerClient(rdb redis.UniversalClient, wk *waker) redis.UniversalClient {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return rdb
	}
	ap, err := c.AutoPipelineWithOptions(&redis.AutoPipelineOptions{FullDuplex: true})
	if err != nil {
		return rdb
	}
	return serverClient{AutoPipeliner: ap, direct: rdb, wk: wk}
}

func (c serverClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if c.wk.watches(keys) {
		return c.direct.EvalSha(ctx, sha, keys, args...)
	}
	return c.AutoPipeliner.EvalSha(ctx, sha, keys, args...)
}

func (c serverClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if c.wk.watches(keys) {
		return c.direct.Eval(ctx, script, keys, args...)
	}
	return c.AutoPipeliner.Eval(ctx, script, keys, args...)
}
