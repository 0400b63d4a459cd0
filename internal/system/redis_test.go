package system

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

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

// A process started while Redis is down waits for it: one warning per
// try, its password never printed, until Redis answers; and it stops
// cleanly when told to while waiting.
func TestOpenRedisWaitsForRedisWithoutPrintingItsPassword(t *testing.T) {
	defer func(w struct{ first, most time.Duration }) { redisWait = w }(redisWait)
	redisWait.first, redisWait.most = 20*time.Millisecond, 50*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing answers there yet
	const password = "r3d1s-pa55"
	target := RedisTarget{URL: "redis://:" + password + "@" + addr + "/0"}
	logs := &syncBuffer{}
	defer func(l *slog.Logger) { slog.SetDefault(l) }(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil)))

	type opened struct {
		c   redis.UniversalClient
		err error
	}
	done := make(chan opened, 1)
	go func() {
		c, _, closeFn, err := OpenRedis(context.Background(), target)
		if err == nil {
			defer closeFn()
			err = c.Ping(context.Background()).Err()
		}
		done <- opened{c, err}
	}()
	for strings.Count(logs.String(), "Redis does not answer") < 2 {
		select {
		case o := <-done:
			t.Fatalf("OpenRedis returned %v before Redis answered; want it to wait", o.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	mr := miniredis.NewMiniRedis()
	mr.RequireAuth(password)
	if err := mr.StartAddr(addr); err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	select {
	case o := <-done:
		if o.err != nil {
			t.Errorf("after Redis came up: %v, want a client that answers", o.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("OpenRedis still waiting 20 s after Redis came up")
	}
	out := logs.String()
	if strings.Contains(out, password) {
		t.Errorf("the password is in the logs:\n%s", out)
	}
	if !strings.Contains(out, addr) {
		t.Errorf("the waiting lines do not say which Redis:\n%s", out)
	}

	// Told to stop (SIGTERM) while waiting: it returns the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		_, _, _, err := OpenRedis(ctx, RedisTarget{URL: "redis://:" + password + "@127.0.0.1:1/0"})
		stopped <- err
	}()
	for !strings.Contains(logs.String(), "@127.0.0.1:1/0") {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("stopped while waiting: %v, want context.Canceled", err)
	}
}

// Errors about a Redis URL never carry its password, whatever the parser says.
func TestRedisURLErrorsAreRedacted(t *testing.T) {
	const password = "r3d1s-pa55"
	refused := 0
	for _, target := range []RedisTarget{
		{URL: "redis://:" + password + "@127.0.0.1:6379/notadb"},
		{URL: "redis://:" + password + "@127.0.0.1:6379/0?bogus_option=1"},
		{URL: "redis://user:" + password + "@[::1:6379"},
		{URL: "redis://:" + password + "@127.0.0.1:7000?addr=bad host", Cluster: true},
	} {
		err := target.Check()
		if err == nil {
			_, err = redisClient(target)
		}
		if err == nil {
			continue
		}
		refused++
		if strings.Contains(err.Error(), password) {
			t.Errorf("%v carries the password", err)
		}
	}
	if refused < 3 {
		t.Errorf("%d of 4 bad URLs refused; the test no longer exercises the errors", refused)
	}
	for raw, want := range map[string]string{
		"redis://:" + password + "@10.0.0.1:6379/0":                            "redis://:xxxxx@10.0.0.1:6379/0",
		"redis-sentinel://10.0.0.1:26379?master=m&password=" + password:        "redis-sentinel://10.0.0.1:26379?master=m&password=xxxxx",
		"s3://b?endpoint=http://AKIA:" + password + "@127.0.0.1:9000&region=r": "s3://b?endpoint=http%3A%2F%2FAKIA%3Axxxxx%40127.0.0.1%3A9000&region=r",
	} {
		if got := RedactURL(raw); got != want || strings.Contains(got, password) {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// syncBuffer collects log lines written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
