package system

import (
	"context"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

func TestRedisURLsOfEveryKindAreUnderstood(t *testing.T) {
	for _, url := range []string{"redis://127.0.0.1:6379/0", "rediss://user:pw@redis.example.com:6380/2", "redis-sentinel://10.0.0.1:26379,10.0.0.2:26379?master=mymaster"} {
		c, err := redisClient(RedisTarget{URL: url})
		if err != nil {
			t.Errorf("%s: %v", url, err)
			continue
		}
		c.Close()
	}
	if _, err := redisClient(RedisTarget{URL: "mysql://db"}); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("mysql URL: err = %v, want one naming REDIS_URL", err)
	}
}

func TestOpenRedisSaysWhenRedisDoesNotAnswer(t *testing.T) {
	_, _, _, err := OpenRedis(context.Background(), RedisTarget{URL: "redis://127.0.0.1:1/0"})
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("err = %v; want REDIS_URL ... does not answer", err)
	}
}

func TestClusterURLsAreReadAsClusters(t *testing.T) {
	target := RedisTarget{URL: "redis://:pw@127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", Cluster: true}
	c, err := redisClient(target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Errorf("client for a cluster URL is %T, want *redis.ClusterClient", c)
	}
	opt, err := target.connOpt()
	if o, ok := opt.(asynq.RedisClusterClientOpt); err != nil || !ok || len(o.Addrs) != 3 || o.Password != "pw" {
		t.Errorf("asynq option = %#v, %v; want the cluster option with 3 nodes and the password", opt, err)
	}
	_, _, _, err = OpenRedis(context.Background(), RedisTarget{Cluster: true})
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") || !strings.Contains(err.Error(), "IMGFLOW_REDIS_CLUSTER") {
		t.Errorf("cluster without a URL: err = %v, want one naming both variables", err)
	}
}
