package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/worker"
)

const keysSetTurnsUsage = `usage:
  imgflow keys set-turns [--weight W] [--limit N]

On fair dispatch (IMGFLOW_DISPATCH=fair), sets an API key's weight (its share
of the turns against other keys with waiting jobs; 1 when unset) and its limit
of jobs running at once across every worker (0 leaves it; negative: none;
unset: IMGFLOW_KEY_SHARE). The key is read as by topup and show ($IMGFLOW_API_KEY,
else standard input) and named in Redis by its hash under IMGFLOW_SECRET, so
--secret and --queue must be serve's and work's. Running workers apply it
within a second.`

// runKeysSetTurns sets one key's turns on fair dispatch (Queue.SetKeyTurns).
func runKeysSetTurns(ctx context.Context, args []string) error {
	var redisURL, secret, queue, weightText string
	var redisCluster bool
	var limit int
	fs := newFlagSet("keys set-turns", keysSetTurnsUsage)
	addRedisFlags(fs, &redisURL, &redisCluster, "Redis URL of serve and work (required)")
	fs.String(&secret, "secret", "IMGFLOW_SECRET", "", "serve's and work's secret: the key's hash in Redis depends on it (required)")
	fs.String(&queue, "queue", "IMGFLOW_QUEUE", "imgflow", "the queue serve and work use")
	fs.String(&weightText, "weight", "", "", "the key's share of the turns (a number above 0; empty leaves it)")
	fs.Int(&limit, "limit", "", 0, "the key's running jobs at once across the workers (0 leaves it; negative: no limit)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("keys set-turns takes no argument (the key is read from $%s or standard input)\n\n%s", keyEnv, keysSetTurnsUsage)
	}
	weight := 0.0
	if weightText != "" {
		if weight, err = strconv.ParseFloat(weightText, 64); err != nil || weight <= 0 {
			return fmt.Errorf("--weight %q must be a number above 0", weightText)
		}
	}
	if weight == 0 && limit == 0 {
		return errors.New("keys set-turns: nothing to set: give --weight, --limit or both")
	}
	if redisURL == "" {
		return errors.New("REDIS_URL (--redis) is required: serve's and work's Redis")
	}
	keys, err := keyring.New(secret)
	if err != nil {
		return fmt.Errorf("IMGFLOW_SECRET (--secret): %w", err)
	}
	key, err := readKey(stdin)
	if err != nil {
		return err
	}
	rdb, _, closeRedis, err := system.OpenRedis(ctx, system.RedisTarget{URL: redisURL, Cluster: redisCluster})
	if err != nil {
		return err
	}
	defer closeRedis()
	client := asynq.NewClientFromRedisClient(rdb)
	q := worker.NewQueue(client, queue, worker.WithFairDispatch(rdb, 0))
	if err := q.SetKeyTurns(ctx, keys.KeyHash(key), weight, limit); err != nil {
		return err
	}
	fmt.Printf("set: weight %s, limit %d (0: left as it was)\n", strconv.FormatFloat(weight, 'g', -1, 64), limit)
	return nil
}
