package worker

import (
	"errors"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// newRedisClient makes the go-redis client of opt, speaking RESP2 when opt
// is a plain server (asynq.RedisClientOpt, what redis:// URLs parse to).
// imgflow uses nothing RESP3 adds (its pub/sub works on RESP2), and with
// RESP3 go-redis peeks every pooled connection for push notifications before
// each command: a syscall per round trip, about 5 % of a busy worker's CPU.
// Sentinel and cluster options keep asynq's client as it makes it.
func newRedisClient(opt asynq.RedisConnOpt) (redis.UniversalClient, error) {
	if o, ok := opt.(asynq.RedisClientOpt); ok {
		return redis.NewClient(&redis.Options{
			Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB,
			DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: o.PoolSize, TLSConfig: o.TLSConfig,
			Protocol: 2,
		}), nil
	}
	rdb, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, errors.New("worker: RedisConnOpt does not make a go-redis client")
	}
	return rdb, nil
}
