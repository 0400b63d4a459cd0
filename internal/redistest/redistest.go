// Package redistest gives tests a Redis: the real server named by REDIS_URL
// when it is set (CI sets it), an in-process miniredis otherwise. Redis may
// be shared with other programs, so each test gets its own key prefix and
// its keys are deleted when it ends.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
)

// Redis is a test's Redis connection and the prefix its keys must carry.
type Redis struct {
	Client *redis.Client
	// Prefix is unique to the test, ends in ":" and should start every key
	// the test writes (and every asynq queue name it uses).
	Prefix string
	// URL connects another client (asynq, a subprocess) to the same server.
	URL string
	// Mini is the embedded server when REDIS_URL is unset, nil otherwise;
	// tests of expiry move its clock with Mini.FastForward.
	Mini *miniredis.Miniredis
}

// New returns a Redis for t and registers its cleanup.
func New(t testing.TB) *Redis {
	t.Helper()
	r := &Redis{Prefix: "t" + randomHex(6) + ":"}
	if url := os.Getenv("REDIS_URL"); url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatalf("REDIS_URL %q: %v", url, err)
		}
		r.URL = url
		if opts.Protocol == 0 {
			opts.Protocol = 2 // as imgflow's own clients (redisClient)
		}
		r.Client = redis.NewClient(opts)
		if err := r.Client.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("REDIS_URL %q does not answer: %v", url, err)
		}
	} else {
		r.Mini = miniredis.RunT(t)
		r.URL = "redis://" + r.Mini.Addr()
		r.Client = redis.NewClient(&redis.Options{Addr: r.Mini.Addr(), Protocol: 2})
	}
	t.Cleanup(func() {
		if r.Mini == nil {
			deleteMatching(r.Client, r.Prefix+"*")
			// The worker's delivery queue (worker.DeliveryQueue), its keys'
			// shares of the workers (worker/fairshare.go) and fair dispatch.
			deliveries := r.Queue() + "-deliveries"
			deleteMatching(r.Client, asynqext.QueueOf(r.Queue()).KeyPattern())
			deleteMatching(r.Client, asynqext.QueueOf(deliveries).KeyPattern())
			deleteMatching(r.Client, "imgflow:share:{"+r.Queue()+"}:*")
			// Fair dispatch's lists, ring and leases (worker/dispatch.go).
			deleteMatching(r.Client, "imgflow:fair:{"+r.Queue()+"}:*")
			r.Client.SRem(context.Background(), asynqext.QueuesKey, r.Queue(), deliveries)
		}
		r.Client.Close()
	})
	return r
}

// Queue is the asynq queue name for this test: the prefix without its colon.
func (r *Redis) Queue() string { return r.Prefix[:len(r.Prefix)-1] }

func deleteMatching(c *redis.Client, pattern string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, pattern, 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		// Pipelined: a benchmark leaves tens of thousands of keys, and
		// a round trip each took longer than the benchmark.
		if keys = append(keys, iter.Val()); len(keys) == 500 {
			deleteKeys(ctx, c, keys)
			keys = keys[:0]
		}
	}
	deleteKeys(ctx, c, keys)
}

func deleteKeys(ctx context.Context, c *redis.Client, keys []string) {
	c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
