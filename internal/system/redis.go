package system

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

// RedisTarget is where a command's Redis is: REDIS_URL (--redis) and
// whether it names a Redis Cluster (IMGFLOW_REDIS_CLUSTER, --redis-cluster).
// A cluster URL is go-redis's: redis://host1:port1?addr=host2:port2&addr=...
// (any reachable nodes; the rest are discovered), and every part of imgflow,
// the asynq queue included, then uses a cluster client.
type RedisTarget struct {
	URL     string
	Cluster bool
}

// Check says what is wrong with a non-empty target, naming the variables.
func (t RedisTarget) Check() error {
	if t.Cluster {
		if _, err := redis.ParseClusterURL(t.URL); err != nil {
			return scrubError(fmt.Errorf("REDIS_URL (--redis) %q is not a Redis Cluster URL (IMGFLOW_REDIS_CLUSTER is on): %v", RedactURL(t.URL), err), t.URL)
		}
		return nil
	}
	if _, err := asynq.ParseRedisURI(t.URL); err != nil {
		return scrubError(fmt.Errorf("REDIS_URL (--redis) %q is not a Redis URL: %v", RedactURL(t.URL), err), t.URL)
	}
	return nil
}

// connOpt is the target as asynq's connection option (its servers and
// inspectors open their own connections).
func (t RedisTarget) connOpt() (asynq.RedisConnOpt, error) {
	if !t.Cluster {
		return asynq.ParseRedisURI(t.URL)
	}
	o, err := redis.ParseClusterURL(t.URL)
	if err != nil {
		return nil, err
	}
	return asynq.RedisClusterClientOpt{
		Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
	}, nil
}

// OpenRedis connects to the target, waiting until it answers
// (WaitForRedis), or, when its URL is "", starts an
// embedded miniredis (for dev and for trying the upstream alone). miniredis
// only expires keys when its clock is moved, so a ticker moves it with the
// wall clock and TTLs behave as on a real server. close stops both.
func OpenRedis(ctx context.Context, t RedisTarget) (client redis.UniversalClient, addr string, closeFn func(), err error) {
	url := t.URL
	if url == "" && t.Cluster {
		return nil, "", nil, fmt.Errorf("IMGFLOW_REDIS_CLUSTER (--redis-cluster) needs REDIS_URL (--redis): the cluster's nodes")
	}
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
		c := redis.NewClient(&redis.Options{Addr: mr.Addr(), Protocol: 2})
		slog.Info("embedded redis (miniredis) started; data is lost on exit", "addr", mr.Addr())
		return c, "redis://" + mr.Addr(), func() { close(stop); c.Close(); mr.Close() }, nil
	}
	c, err := redisClient(t)
	if err != nil {
		return nil, "", nil, err
	}
	if err := WaitForRedis(ctx, c, t, slog.Default()); err != nil {
		c.Close()
		return nil, "", nil, err
	}
	return c, url, func() { c.Close() }, nil
}

// redisWait is how long WaitForRedis waits between pings: first, doubling
// up to most.
var redisWait = struct{ first, most time.Duration }{time.Second, 30 * time.Second}

// WaitForRedis pings c until Redis answers, so that a process started
// during a Redis outage (or before Redis, in a cluster that starts them
// together) waits for it instead of exiting into a restart loop: one
// warning per failed ping, the URL redacted, the wait doubling from 1 s to
// 30 s. It returns an error wrapping ctx's when ctx ends first (SIGTERM
// while waiting).
func WaitForRedis(ctx context.Context, c redis.UniversalClient, t RedisTarget, log *slog.Logger) error {
	wait := redisWait.first
	for attempt := 1; ; attempt++ {
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.Ping(pingCtx).Err()
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("Redis answers", "redis", RedactURL(t.URL), "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("REDIS_URL %s does not answer; stopped waiting: %w", RedactURL(t.URL), ctx.Err())
		}
		log.Warn("Redis does not answer; waiting for it", "redis", RedactURL(t.URL), "err", scrub(err.Error(), t.URL), "attempt", attempt, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("REDIS_URL %s does not answer; stopped waiting: %w", RedactURL(t.URL), ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, redisWait.most)
	}
}

// redisClient makes a client for a redis://, rediss:// or
// redis-sentinel:// URL (asynq reads the same URLs for the queue), or a
// cluster client. It fails fast: a Redis outage becomes a quick 503 with
// Retry-After instead of go-redis's default dial retries and back-offs
// (about 0.4 s per call). A cluster client still follows MOVED and ASK
// redirects (MaxRedirects, default 3), which is how it rides out a failover.
func redisClient(t RedisTarget) (redis.UniversalClient, error) {
	url := t.URL
	if t.Cluster {
		opts, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, scrubError(fmt.Errorf("REDIS_URL %q (a cluster URL, IMGFLOW_REDIS_CLUSTER is on): %w", RedactURL(url), err), url)
		}
		opts.MaxRetries, opts.DialerRetries = 1, 1
		opts.Protocol = resp2Unless(opts.Protocol)
		return redis.NewClusterClient(opts), nil
	}
	if strings.HasPrefix(url, "redis-sentinel://") {
		connOpt, err := asynq.ParseRedisURI(url)
		if err != nil {
			return nil, scrubError(fmt.Errorf("REDIS_URL %q: %w", RedactURL(url), err), url)
		}
		c := connOpt.MakeRedisClient().(*redis.Client)
		c.Options().MaxRetries = 1
		return c, nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, scrubError(fmt.Errorf("REDIS_URL %q: %w", RedactURL(url), err), url)
	}
	opts.MaxRetries, opts.DialerRetries = 1, 1
	opts.Protocol = resp2Unless(opts.Protocol)
	return redis.NewClient(opts), nil
}

// resp2Unless is RESP2 unless the URL asked for a protocol (?protocol=3).
// imgflow uses nothing RESP3 adds, and under RESP3 go-redis peeks every
// pooled connection for push notifications before each command: a syscall
// per round trip, about 5 % of a busy process's CPU.
func resp2Unless(asked int) int {
	if asked != 0 {
		return asked
	}
	return 2
}
