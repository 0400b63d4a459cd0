package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/imgflow/imgflow/internal/system"
)

// The benchmarks in this file count what each path costs Redis: every
// command the server executed (INFO commandstats, so Lua-internal calls
// count too) and the round trips of the API's and worker's go-redis client
// (asynq's server polls on connections of its own and is only in the first
// figure). INFO commandstats is server-wide: run them against a Redis of
// their own, e.g.
//
//	redis-server --port 6413 --save '' &
//	REDIS_URL=redis://127.0.0.1:6413/0 go test -run '^$' -bench RedisCommands -benchtime 200x .
//
// With -v the per-command breakdown is logged.

// tripCounter is a go-redis hook counting round trips: one per command, one
// per pipeline or MULTI/EXEC block.
type tripCounter struct{ n atomic.Int64 }

func (t *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (t *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { t.n.Add(1); return next(ctx, cmd) }
}
func (t *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { t.n.Add(1); return next(ctx, cmds) }
}

// redisCost measures the commands and round trips of what runs between
// start and stop, per op.
type redisCost struct {
	b      *testing.B
	admin  *redis.Client // INFO and the done subscription: not counted in trips
	trips  *tripCounter
	before map[string]int64
	t0     int64
}

// newRedisCost starts counting on r's client. Call it after the app is
// built on r: go-redis runs hooks in the order they were added, and the
// app's own hook that sends an enqueue and its wake-up as one pipeline
// (worker/wakehook.go) must run first for that to count as one trip.
func newRedisCost(b *testing.B, r *redistest.Redis) *redisCost {
	if r.Mini != nil {
		b.Skip("set REDIS_URL to a Redis of the benchmark's own: INFO commandstats counts every client")
	}
	opts, _ := redis.ParseURL(r.URL)
	admin := redis.NewClient(opts)
	b.Cleanup(func() { admin.Close() })
	t := &tripCounter{}
	r.Client.AddHook(t)
	return &redisCost{b: b, admin: admin, trips: t}
}

func (c *redisCost) start() {
	c.before = redistest.CommandStats(c.b, c.admin)
	c.t0 = c.trips.n.Load()
}

func (c *redisCost) stop(ops int) {
	after := redistest.CommandStats(c.b, c.admin)
	trips := c.trips.n.Load() - c.t0
	type row struct {
		name string
		n    int64
	}
	var rows []row
	var total int64
	for name, n := range after {
		d := n - c.before[name]
		if name == "info" {
			d-- // our own INFO
		}
		if d > 0 {
			rows = append(rows, row{name, d})
			total += d
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].n > rows[j].n || rows[i].n == rows[j].n && rows[i].name < rows[j].name
	})
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, " %s=%.2f", r.name, float64(r.n)/float64(ops))
	}
	c.b.Logf("per op over %d ops:%s", ops, sb.String())
	c.b.ReportMetric(float64(total)/float64(ops), "redis-cmds/op")
	c.b.ReportMetric(float64(trips)/float64(ops), "client-trips/op")
}

// doJSON sends a request with the bench key and decodes a JSON answer.
func doJSON(b *testing.B, method, url string, body []byte, header map[string]string, want int) map[string]any {
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", "sk_bench_key_0000")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		b.Fatalf("%s %s: %d %s", method, url, res.StatusCode, data)
	}
	var out map[string]any
	json.Unmarshal(data, &out)
	return out
}

// waitDone counts finished jobs of r's store through its own subscription.
func waitDone(b *testing.B, admin *redis.Client, r *redistest.Redis) func(n int) {
	ps := admin.PSubscribe(context.Background(), r.Prefix+"done:*")
	if _, err := ps.Receive(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ps.Close() })
	ch := ps.Channel()
	return func(n int) {
		for range n {
			select {
			case <-ch:
			case <-time.After(time.Minute):
				b.Fatal("jobs did not finish")
			}
		}
	}
}

// BenchmarkRedisCommandsPerJob counts, per request or job, the Redis
// commands and round trips of each path: POST /v1/jobs (with and without an
// Idempotency-Key; the worker not running), the worker's handling of a
// queued job, GET /v1/jobs/{id}, GET /v1/jobs/{id}/file, and POST ?wait=25
// all the way to the answer. The rows named without -fair pin asynq
// dispatch (onAsynq), the -fair ones fair dispatch, the default.
func BenchmarkRedisCommandsPerJob(b *testing.B) {
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(b, "screenshot.png")) + `"}`)
	post := func(b *testing.B, api string, header map[string]string) string {
		return doJSON(b, "POST", api+"/v1/jobs", body, header, http.StatusAccepted)["id"].(string)
	}
	b.Run("POST", func(b *testing.B) {
		r := redistest.New(b)
		api, _ := benchParts(b, r, onAsynq)
		cost := newRedisCost(b, r)
		post(b, api, nil) // warm-up: script loads, queue registration, key check cache
		cost.start()
		for range b.N {
			post(b, api, nil)
		}
		cost.stop(b.N)
	})
	b.Run("POST-idempotency-key", func(b *testing.B) {
		r := redistest.New(b)
		api, _ := benchParts(b, r, onAsynq)
		cost := newRedisCost(b, r)
		post(b, api, map[string]string{"Idempotency-Key": "warm-up"})
		cost.start()
		for i := range b.N {
			post(b, api, map[string]string{"Idempotency-Key": "k" + strconv.Itoa(i)})
		}
		cost.stop(b.N)
	})
	// The work rows run one key's 100 queued jobs on 64 workers: with the
	// key's share of the workers (IMGFLOW_KEY_SHARE, all but one) the 64th
	// at once would be parked for another key, an asynq retry: a cost of
	// fairness under a one-key flood (BENCHMARK.md, "Fairness"), not of a
	// job, so these rows measure a job without it. The share's admission
	// itself is in-process and costs no Redis command.
	noShare := func(o *system.Options) { o.KeyShare = -1 }
	b.Run("work", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")), onAsynq, noShare)
		cost := newRedisCost(b, r)
		done := waitDone(b, cost.admin, r)
		for range b.N {
			post(b, api, nil)
		}
		cost.start()
		startWorker(64)
		done(b.N)
		cost.stop(b.N)
	})
	b.Run("GET", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchParts(b, r, onAsynq)
		cost := newRedisCost(b, r)
		startWorker(4)
		id := doJSON(b, "POST", api+"/v1/jobs?wait=25", body, nil, http.StatusOK)["id"].(string)
		cost.start()
		for range b.N {
			doJSON(b, "GET", api+"/v1/jobs/"+id, nil, nil, http.StatusOK)
		}
		cost.stop(b.N)
	})
	b.Run("GET-file", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchParts(b, r, onAsynq)
		cost := newRedisCost(b, r)
		startWorker(4)
		id := doJSON(b, "POST", api+"/v1/jobs?wait=25", body, nil, http.StatusOK)["id"].(string)
		cost.start()
		for range b.N {
			req, _ := http.NewRequest("GET", api+"/v1/jobs/"+id+"/file", nil)
			req.Header.Set("X-API-Key", "sk_bench_key_0000")
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != http.StatusOK {
				b.Fatal(res, err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		cost.stop(b.N)
	})
	b.Run("POST-wait", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchParts(b, r, onAsynq)
		postWaitCost(b, r, api, startWorker, body)
	})
	// Fair dispatch (IMGFLOW_DISPATCH=fair): the same two paths with
	// compress jobs on imgflow's dispatcher instead of asynq's queue.
	fair := func(o *system.Options) { o.Dispatch = "fair" }
	b.Run("POST-fair", func(b *testing.B) {
		r := redistest.New(b)
		api, _ := benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")), fair)
		cost := newRedisCost(b, r)
		post(b, api, nil)
		cost.start()
		for range b.N {
			post(b, api, nil)
		}
		cost.stop(b.N)
	})
	b.Run("work-fair", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")), fair)
		cost := newRedisCost(b, r)
		done := waitDone(b, cost.admin, r)
		for range b.N {
			post(b, api, nil)
		}
		cost.start()
		startWorker(64)
		done(b.N)
		cost.stop(b.N)
	})
	b.Run("POST-wait-fair", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")), fair)
		postWaitCost(b, r, api, startWorker, body)
	})

	// The same with the shipped defaults of the limits a POST checks
	// (IMGFLOW_MAX_JOBS_PER_KEY=50, IMGFLOW_FREE_FAILURES_PER_HOUR=60), which
	// the rows above leave off: what a deployment's job costs.
	b.Run("POST-wait-fair-defaults", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")), fair,
			func(o *system.Options) {
				o.MaxJobsPerKey, o.FreeFailuresPerHour = 50, connector.DefaultFreeFailuresPerHour
			})
		postWaitCost(b, r, api, startWorker, body)
	})

	// Content dedupe on: "new" posts a different image each time (the
	// same PNG with a counter after its end, which decoders ignore), so every
	// job looks the index up, claims its image and records itself: what
	// dedupe costs a job it cannot help. "repeat" posts one image: every job
	// after the first completes from an earlier one's result, uncompressed.
	dedupeOn := func(o *system.Options) { o.Dedupe = "on" }
	png := images.Read(b, "screenshot.png")
	newImage := func(i int) []byte {
		img := append(append([]byte(nil), png...), []byte(strconv.Itoa(i))...)
		return []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(img) + `"}`)
	}
	b.Run("work-dedupe-new", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, png), onAsynq, dedupeOn, noShare)
		cost := newRedisCost(b, r)
		done := waitDone(b, cost.admin, r)
		for i := range b.N {
			doJSON(b, "POST", api+"/v1/jobs", newImage(i), nil, http.StatusAccepted)
		}
		cost.start()
		startWorker(64)
		done(b.N)
		cost.stop(b.N)
	})
	b.Run("POST-wait-dedupe-new", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, png), onAsynq, dedupeOn)
		cost := newRedisCost(b, r)
		startWorker(4)
		doJSON(b, "POST", api+"/v1/jobs?wait=25", newImage(-1), nil, http.StatusOK)
		cost.start()
		for i := range b.N {
			doJSON(b, "POST", api+"/v1/jobs?wait=25", newImage(i), nil, http.StatusOK)
		}
		cost.stop(b.N)
	})
	// What a deployment's ?wait job costs as a harness of the real
	// processes counts it: every shipped default (fair dispatch, the key
	// cap, the free-failure budget, content dedupe on, a new image each
	// time) and the reference compression API keeping its ledger on the
	// same Redis, its commands counted with imgflow's.
	b.Run("POST-wait-shipped", func(b *testing.B) {
		r := redistest.New(b)
		ledger := refupstream.NewLedger(r.Client, r.Prefix+"up:", nil)
		key, _, err := ledger.CreateAccount(context.Background(), 1_000_000)
		if err != nil {
			b.Fatal(err)
		}
		up := httptest.NewServer(refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
		b.Cleanup(up.Close)
		api, startWorker := benchPartsUpstream(b, r, up.URL+"/api", func(o *system.Options) {
			o.MaxJobsPerKey, o.FreeFailuresPerHour, o.Dedupe = 50, connector.DefaultFreeFailuresPerHour, "on"
		})
		cost := newRedisCost(b, r)
		startWorker(4)
		asKey := map[string]string{"X-API-Key": key}
		doJSON(b, "POST", api+"/v1/jobs?wait=25", newImage(-1), asKey, http.StatusOK)
		cost.start()
		for i := range b.N {
			doJSON(b, "POST", api+"/v1/jobs?wait=25", newImage(i), asKey, http.StatusOK)
		}
		cost.stop(b.N)
	})
	b.Run("POST-wait-dedupe-repeat", func(b *testing.B) {
		r := redistest.New(b)
		api, startWorker := benchPartsUpstream(b, r, instantUpstream(b, png), onAsynq, dedupeOn)
		cost := newRedisCost(b, r)
		startWorker(4)
		doJSON(b, "POST", api+"/v1/jobs?wait=25", body, nil, http.StatusOK)
		cost.start()
		for range b.N {
			job := doJSON(b, "POST", api+"/v1/jobs?wait=25", body, nil, http.StatusOK)
			if job["deduplicated_from"] == nil {
				b.Fatalf("a repeat was compressed: %v", job)
			}
		}
		cost.stop(b.N)
	})
}

// BenchmarkRedisCommandsIdle reports what an idle serve + work pair costs
// Redis per second on the default dispatch (fair: a dispatch per IdleWait,
// a maintenance a second), BenchmarkRedisCommandsIdleAsynq on asynq's
// (its polling and housekeeping); each op is 100 ms.
func BenchmarkRedisCommandsIdle(b *testing.B)      { benchIdleCost(b) }
func BenchmarkRedisCommandsIdleAsynq(b *testing.B) { benchIdleCost(b, onAsynq) }

// benchIdleCost reports the Redis commands per second of an idle serve +
// work pair (configured by configure), past its start-up.
func benchIdleCost(b *testing.B, configure ...func(*system.Options)) {
	r := redistest.New(b)
	cost := newRedisCost(b, r)
	_, startWorker := benchPartsUpstream(b, r, instantUpstream(b, images.Read(b, "screenshot.png")), configure...)
	startWorker(10)
	time.Sleep(time.Second) // past start-up
	cost.start()
	start := time.Now()
	for range b.N {
		time.Sleep(100 * time.Millisecond)
	}
	secs := time.Since(start).Seconds()
	cost.stop(b.N)
	after := redistest.CommandStats(b, cost.admin)
	var total int64
	for name, n := range after {
		total += n - cost.before[name]
	}
	b.ReportMetric(float64(total)/secs, "redis-cmds/s")
}

// postWaitCost counts what a whole ?wait job of body costs on api, past a
// first job that warms the worker (4 at a time) and loads the scripts.
func postWaitCost(b *testing.B, r *redistest.Redis, api string, startWorker func(int), body []byte) {
	cost := newRedisCost(b, r)
	startWorker(4)
	doJSON(b, "POST", api+"/v1/jobs?wait=25", body, nil, http.StatusOK)
	cost.start()
	for range b.N {
		doJSON(b, "POST", api+"/v1/jobs?wait=25", body, nil, http.StatusOK)
	}
	cost.stop(b.N)
}
