package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
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
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, "", nil, fmt.Errorf("REDIS_URL %q: %w", url, err)
	}
	// Fail fast when Redis is down, so callers get a 503 with Retry-After
	// in well under a second instead of go-redis's retries and back-offs.
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 1
	}
	if opts.DialerRetries == 0 {
		opts.DialerRetries = 1
	}
	c := redis.NewClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pingCtx).Err(); err != nil {
		c.Close()
		return nil, "", nil, fmt.Errorf("REDIS_URL %q does not answer: %w", url, err)
	}
	return c, url, func() { c.Close() }, nil
}
