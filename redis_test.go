package main

import (
	"context"
	"strings"
	"testing"
)

func TestRedisURLsOfEveryKindAreUnderstood(t *testing.T) {
	for _, url := range []string{"redis://127.0.0.1:6379/0", "rediss://user:pw@redis.example.com:6380/2", "redis-sentinel://10.0.0.1:26379,10.0.0.2:26379?master=mymaster"} {
		c, err := redisClient(redisTarget{URL: url})
		if err != nil {
			t.Errorf("%s: %v", url, err)
			continue
		}
		c.Close()
	}
	if _, err := redisClient(redisTarget{URL: "mysql://db"}); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("mysql URL: err = %v, want one naming REDIS_URL", err)
	}
}

func TestOpenRedisSaysWhenRedisDoesNotAnswer(t *testing.T) {
	_, _, _, err := openRedis(context.Background(), redisTarget{URL: "redis://127.0.0.1:1/0"})
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("err = %v; want REDIS_URL ... does not answer", err)
	}
}
