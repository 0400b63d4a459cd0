package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a three-master Redis Cluster that a test started on loopback.
type Cluster struct {
	// Client is a cluster client of it.
	Client *redis.ClusterClient
	// URL is its go-redis cluster URL, redis://a?addr=b&addr=c, as
	// REDIS_URL takes it with IMGFLOW_REDIS_CLUSTER=true.
	URL string
	// Addrs are the nodes' host:port.
	Addrs []string
	// Prefix is unique to the test, as in Redis.
	Prefix string
}

// NewCluster starts three redis-server processes with cluster mode on, in
// temporary directories on free loopback ports, joins them with
// redis-cli --cluster create and waits until the cluster answers. It skips
// the test when redis-server or redis-cli is not installed (apt-get install
// redis-server has both). Everything stops when the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("Redis Cluster test skipped: %s is not installed (apt-get install redis-server)", bin)
		}
	}
	c := &Cluster{Prefix: "t" + randomHex(6) + ":"}
	for range 3 {
		port := freeClusterPort(t)
		dir := t.TempDir()
		cmd := exec.Command("redis-server",
			"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--dir", dir,
			"--save", "", "--appendonly", "no", "--cluster-node-timeout", "2000")
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		c.Addrs = append(c.Addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	for _, a := range c.Addrs {
		waitAnswers(t, a)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.URL = "redis://" + c.Addrs[0] + "?addr=" + c.Addrs[1] + "&addr=" + c.Addrs[2]
	c.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { c.Client.Close() })
	waitClusterOK(t, c)
	return c
}

// freeClusterPort is a free loopback port whose cluster bus port (+10000)
// is free too.
func freeClusterPort(t testing.TB) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

func waitAnswers(t testing.TB, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server at %s never answered", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitClusterOK waits until every node reports cluster_state:ok and the
// client can write to every master.
func waitClusterOK(t testing.TB, c *Cluster) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, a := range c.Addrs {
			n := redis.NewClient(&redis.Options{Addr: a})
			info, err := n.ClusterInfo(ctx).Result()
			n.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok = false
			}
		}
		if ok {
			err := c.Client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
			if err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the Redis Cluster never reached cluster_state:ok")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
