package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/server"
)

// upstreamOptions configure `imgflow upstream`.
type upstreamOptions struct {
	// Addr (--addr, IMGFLOW_UPSTREAM_ADDR): where the API listens. Default
	// 127.0.0.1:8081; port 0 picks a free one.
	Addr string
	// RedisURL (--redis, REDIS_URL): where accounts live. Empty starts an
	// embedded Redis whose accounts vanish on exit; a demo key is then
	// created and printed.
	RedisURL string
	// RedisCluster (--redis-cluster, IMGFLOW_REDIS_CLUSTER): RedisURL names
	// a Redis Cluster. Default false.
	RedisCluster bool
	// Latency (--latency, UPSTREAM_LATENCY): added before each /compress
	// and /validate answer. Default 0.
	Latency time.Duration
	// FailRate (--fail-rate, UPSTREAM_FAIL_RATE): share (0..1) of /compress
	// and /validate requests answered 500 and never charged. Default 0.
	FailRate float64
	// Idempotency (--idempotency, UPSTREAM_IDEMPOTENCY): honour the
	// Idempotency-Key header on /compress (fixtures/upstream/README.md).
	// Default true; false answers as an upstream of the bare contract.
	Idempotency bool
}

// runUpstream runs the reference compression API alone, under /api.
func runUpstream(ctx context.Context, args []string) error {
	var o upstreamOptions
	var failRate string
	fs := newFlagSet("upstream", "Runs the reference compression API (POST /api/compress, POST /api/validate, GET /api/health).\nAccounts live in Redis; create keys with 'imgflow keys create'.")
	fs.String(&o.Addr, "addr", "IMGFLOW_UPSTREAM_ADDR", "127.0.0.1:8081", "listen address")
	addRedisFlags(fs, &o.RedisURL, &o.RedisCluster, "Redis URL for accounts; empty starts an embedded Redis (accounts lost on exit) and prints a demo key")
	fs.Duration(&o.Latency, "latency", "UPSTREAM_LATENCY", 0, "latency added to /compress and /validate, e.g. 300ms")
	fs.String(&failRate, "fail-rate", "UPSTREAM_FAIL_RATE", "0", "share 0..1 of /compress and /validate requests answered 500 (never charged)")
	fs.Bool(&o.Idempotency, "idempotency", "UPSTREAM_IDEMPOTENCY", true, "honour the Idempotency-Key header on /compress (false: ignore it, as an upstream of the bare contract)")
	err := fs.parse(args)
	if err != nil {
		return err
	}
	o.FailRate, err = strconv.ParseFloat(failRate, 64)
	if err != nil || o.FailRate < 0 || o.FailRate > 1 {
		return fmt.Errorf("UPSTREAM_FAIL_RATE (--fail-rate) %q must be a number from 0 to 1", failRate)
	}
	if o.Latency < 0 {
		return fmt.Errorf("UPSTREAM_LATENCY (--latency) %v must not be negative", o.Latency)
	}

	rdb, _, closeRedis, err := system.OpenRedis(ctx, system.RedisTarget{URL: o.RedisURL, Cluster: o.RedisCluster})
	if err != nil {
		return err
	}
	defer closeRedis()
	ledger := refupstream.NewLedger(rdb, refupstream.DefaultPrefix, nil)

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("IMGFLOW_UPSTREAM_ADDR (--addr) %s: %w", o.Addr, err)
	}
	base := "http://" + ln.Addr().String() + "/api"
	fmt.Fprintf(os.Stdout, "reference compression API: %s\n", base)
	if o.RedisURL == "" {
		key, acct, err := ledger.CreateAccount(ctx, 0)
		if err != nil {
			ln.Close()
			return err
		}
		fmt.Fprintf(os.Stdout, "demo key: %s (%d credits; embedded Redis: it is gone when this process exits)\n", key, acct.CreditsRemaining)
		fmt.Fprintf(os.Stdout, "try: curl -s %s/compress -F api_key=%s -F file=@fixtures/images/photo.png\n", base, key)
	}
	if o.RedisURL != "" {
		fmt.Fprintln(os.Stdout, "make a key with: imgflow keys create (with the same REDIS_URL)")
	}
	if o.Latency > 0 || o.FailRate > 0 {
		slog.Info("upstream: injecting faults", "latency", o.Latency, "fail_rate", o.FailRate)
	}
	if !o.Idempotency {
		slog.Info("upstream: Idempotency-Key ignored (--idempotency=false)")
	}

	handler := refupstream.NewServer(refupstream.Config{
		Ledger:               ledger,
		Latency:              o.Latency,
		FailRate:             o.FailRate,
		IgnoreIdempotencyKey: !o.Idempotency,
		Logger:               slog.Default().With("component", "upstream"),
	})
	return server.ServeHTTP(ctx, ln, handler)
}
