package main

import (
	"context"
	"encoding/base64"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// BenchmarkMCPvsREST runs the same compress, side by side, as a REST call
// (POST /v1/jobs?wait=25) and as an MCP tool call (compress_image through
// the official Go SDK client over Streamable HTTP): serve + work on Redis
// against the instant upstream, one request at a time, each waiting for the
// completed job. It reports each path's p50 and the round trips the API's
// and worker's Redis client made per call; the MCP overhead is the
// difference of the two rows (BENCHMARK.md, "MCP").
//
//	go test -run '^$' -bench MCPvsREST -benchtime 300x .
//	REDIS_URL=redis://127.0.0.1:6471/0 go test -run '^$' -bench MCPvsREST -benchtime 300x .  (a redis-server of its own)
func BenchmarkMCPvsREST(b *testing.B) {
	png := base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png"))
	body := []byte(`{"image_base64":"` + png + `"}`)
	b.Run("rest", func(b *testing.B) {
		r := redistest.New(b)
		api := benchSystem(b, r, 4)
		trips := countTrips(r)
		timed(b, r, trips, func() { postJob(b, api, "application/json", body) })
	})
	b.Run("mcp", func(b *testing.B) {
		r := redistest.New(b)
		api := benchSystem(b, r, 4)
		trips := countTrips(r)
		c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: api + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: systemtest.KeyTransport{Header: "X-API-Key", Value: "sk_bench_key_0000", Base: benchClient.Transport}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := map[string]any{"image_base64": png}
		timed(b, r, trips, func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "compress_image", Arguments: args})
			if err != nil || res.IsError || !strings.Contains(systemtest.ToolText(res), "Compressed") {
				b.Errorf("compress_image: %v %v", err, res)
			}
		})
	})
}

// countTrips counts the round trips of the app's Redis client from now on.
func countTrips(r *redistest.Redis) *tripCounter {
	t := &tripCounter{}
	r.Client.AddHook(t)
	return t
}

// timed runs op b.N times, one at a time, and reports the p50 and p90
// latency and the Redis round trips per op; on a real Redis of the
// benchmark's own (REDIS_URL), also every command the server ran per op
// (INFO commandstats, asynq's own connections included).
func timed(b *testing.B, r *redistest.Redis, trips *tripCounter, op func()) {
	op() // warm: connections, the key check, the SDK's schema caches
	lat := make([]time.Duration, 0, b.N)
	var admin *redis.Client
	var before map[string]int64
	if r.Mini == nil {
		opts, _ := redis.ParseURL(r.URL)
		admin = redis.NewClient(opts)
		defer admin.Close()
		before = redistest.CommandStats(b, admin)
	}
	t0 := trips.n.Load()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		op()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(trips.n.Load()-t0)/float64(b.N), "client-trips/op")
	if admin != nil {
		var total int64
		for name, n := range redistest.CommandStats(b, admin) {
			if name != "info" {
				total += n - before[name]
			}
		}
		b.ReportMetric(float64(total)/float64(b.N), "redis-cmds/op")
	}
}
