package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// conn is what every aggregate shares: the clients, the key layout
// (keys.go), the record TTL and the clock. Each aggregate embeds it and
// keeps its own keys' scripts and settings.
type conn struct {
	// rdb sends the small commands: the autopipeliner over bulk, or bulk
	// itself (Options.Unbatched, a cluster).
	rdb redis.UniversalClient
	// bulk is the client as given: blob bytes, pub/sub, WATCH.
	bulk redis.UniversalClient
	keys keyspace
	// jobTTL is Options.JobTTL: how long jobs, batches and their logs live.
	jobTTL time.Duration
	now    func() time.Time
}

// smallValue is the largest value the store writes or reads through the
// autopipeliner: larger ones go on a pooled connection of their own, so a
// 10 MiB upload never holds up other jobs' commands queued behind it.
const smallValue = 32 << 10

// onCluster says whether the store is on a Redis Cluster, where a round
// trip or a script touches one hash slot's keys only.
func (s *conn) onCluster() bool {
	_, cluster := s.bulk.(*redis.ClusterClient)
	return cluster
}

// clientFor is the client for a round trip that carries n bytes of blob.
func (s *conn) clientFor(n int64) redis.UniversalClient {
	if n <= smallValue {
		return s.rdb
	}
	return s.bulk
}

// watch runs fn under WATCH key and retries it when another client changed
// key before fn's MULTI/EXEC ran. fn should queue its writes with
// tx.TxPipelined; errors it returns wrapped in callerErr come back as they are.
func (s *conn) watch(ctx context.Context, key string, fn func(tx *redis.Tx) error) error {
	for range maxTxAttempts {
		err := s.bulk.Watch(ctx, fn, key)
		if errors.Is(err, redis.TxFailedErr) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		var ce callerErr
		if errors.As(err, &ce) {
			return ce.err
		}
		return storageErr(err)
	}
	return &connector.Error{
		Code:       connector.EUNAVAILABLE,
		Message:    "storage busy",
		RetryAfter: time.Second,
		Retryable:  true,
		Err:        fmt.Errorf("redisstore: %s still contended after %d attempts", key, maxTxAttempts),
	}
}

// Lua scripts live with the aggregate whose keys they touch, each over the
// keys of one hash slot so that they run on a Redis Cluster too. go-redis
// sends EVALSHA and falls back to EVAL once when the server does not know
// the script yet; pipelinedScripts does the same for a pipeline.

// pipelinedScripts sends the commands queue adds (scripts as EVALSHA) in one
// pipeline, one round trip. When Redis did not know a script (NOSCRIPT: the
// first use, a restart or SCRIPT FLUSH), it loads the scripts and sends
// again only the commands that failed so: the others ran, and some (SET NX)
// must not run twice.
func (s *conn) pipelinedScripts(ctx context.Context, queue func(p redis.Pipeliner)) ([]redis.Cmder, error) {
	return s.pipelinedScriptsOn(ctx, s.rdb, queue)
}

// pipelinedScriptsOn is pipelinedScripts on client c (see clientFor).
func (s *conn) pipelinedScriptsOn(ctx context.Context, c redis.UniversalClient, queue func(p redis.Pipeliner)) ([]redis.Cmder, error) {
	return s.pipelinedScriptsLoading(ctx, c, nil, queue)
}

// pipelinedScriptsLoading is pipelinedScriptsOn for a pipeline that may
// also run scripts made at run time (extra), which allScripts does not
// hold.
func (s *conn) pipelinedScriptsLoading(ctx context.Context, c redis.UniversalClient, extra []*redis.Script, queue func(p redis.Pipeliner)) ([]redis.Cmder, error) {
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
	var again []redis.Cmder
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && strings.HasPrefix(cerr.Error(), "NOSCRIPT") {
			again = append(again, c)
		}
	}
	if len(again) == 0 {
		return cmds, err
	}
	for _, sc := range append(extra, allScripts...) {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return cmds, err
		}
	}
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, cmd := range again {
			cmd.SetErr(nil)
			p.Process(ctx, cmd)
		}
		return nil
	})
	for _, c := range cmds {
		if err == nil {
			err = c.Err()
		}
	}
	return cmds, err
}

// allScripts are the scripts pipelinedScripts may have to load.
var allScripts = []*redis.Script{casScript, endJobScript, keepEndScript, answerCallScript, admitAndListScript, recordAttemptScript, commitStagedScript}
