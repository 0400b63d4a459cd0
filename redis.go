package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// openRedis connects to url, or, when url is "", starts an embedded
// miniredis (for dev and for trying the upstream alone). miniredis only
// expires keys when its clock is moved, so a ticker moves it with the wall
// clock and TTLs behave as on a real server. close stops both.
func openRedis(ctx context.Context, url string) (client redis.UniversalClient, addr string, closeFn func(), err error) {
	if url == "" {
		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			return nil, "", nil, fmt.Errorf("embedded redis: %w", err)
		}
		stop := make(chan struct{})
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			last := time.Now()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					mr.FastForward(now.Sub(last))
					last = now
				}
			}
		}()
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		slog.Info("embedded redis (miniredis) started; data is lost on exit", "addr", mr.Addr())
		return c, "redis://" + mr.Addr(), func() { close(stop); c.Close(); mr.Close() }, nil
	}
	c, err := redisClient(url)
	if err != nil {
		return nil, "", nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pingCtx).Err(); err != nil {
		c.Close()
		return nil, "", nil, fmt.Errorf("REDIS_URL %q does not answer: %w", url, err)
	}
	return c, url, func() { c.Close() }, nil
}

// redisClient makes a client for a redis://, rediss:// or
// redis-sentinel:// URL (asynq reads the same URLs for the queue). It fails
// fast: a Redis outage becomes a quick 503 with Retry-After instead of
// go-redis's default dial retries and back-offs (about 0.4 s per call).
func redisClient(url string) (redis.UniversalClient, error) {
	if strings.HasPrefix(url, "redis-sentinel://") {
		connOpt, err := asynq.ParseRedisURI(url)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL %q: %w", url, err)
		}
		c := connOpt.MakeRedisClient().(*redis.Client)
		c.Options().MaxRetries = 1
		return c, nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL %q: %w", url, err)
	}
	opts.MaxRetries, opts.DialerRetries = 1, 1
	return redis.NewClient(opts), nil
}
