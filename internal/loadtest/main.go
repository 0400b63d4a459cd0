// Command loadtest measures imgflow's HTTP API under load with vegeta (as a
// Go library): it builds imgflow, runs `imgflow serve` and `imgflow work` as
// the real commands against a Redis of its own and a compression API stub
// that answers at once (so the figures are imgflow's), and prints Markdown
// tables for BENCHMARK.md:
//
//   - POST /v1/jobs (no wait), GET /v1/jobs/{id} and POST /v1/jobs?wait=25 at
//     1, 10 and 100 concurrent clients: requests/s, p50, p99, errors;
//   - the same POST and GET with 1k, 10k and 100k jobs queued (worker
//     stopped), Redis memory per stored job, and how fast the worker then
//     drains the queue.
//
// Everything listens on and dials loopback only. Run it from the repository
// root against an empty Redis it may fill (it counts INFO memory):
//
//	redis-server --port 6413 --save '' --daemonize yes
//	go run ./internal/loadtest -redis redis://127.0.0.1:6413/0
//
// -profile DIR also writes CPU profiles of serve and work (IMGFLOW_CPU_PROFILE)
// for the concurrency runs; -fill picks the queue depths; -quick runs 2 s per
// row and fills to 10k at most.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/asynqext"
)

const apiKey = "sk_loadtest_key_0000"

func main() {
	redisURL := flag.String("redis", "", "URL of a Redis of the load test's own (required), e.g. redis://127.0.0.1:6413/0")
	duration := flag.Duration("duration", 5*time.Second, "how long each row runs")
	profileDir := flag.String("profile", "", "write CPU profiles of serve and work (concurrency runs) into this directory")
	quick := flag.Bool("quick", false, "2 s per row, queues up to 10k jobs")
	fillList := flag.String("fill", "1000,10000,100000", "queue depths to measure at, comma-separated (\"\" for none)")
	flag.Parse()
	if *redisURL == "" {
		log.Fatal("-redis is required: a Redis of the load test's own (it reads INFO memory)")
	}
	var fills []int
	for _, f := range strings.Split(*fillList, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			fills = append(fills, n)
		}
	}
	if *quick {
		*duration = 2 * time.Second
		fills = slices.DeleteFunc(fills, func(n int) bool { return n > 10000 })
	}
	opts, err := redis.ParseURL(*redisURL)
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()

	bin := buildImgflow()
	png, err := os.ReadFile(images.Path("screenshot.png"))
	if err != nil {
		log.Fatal(err)
	}
	up := startStub(png)
	apiAddr := freeAddr()
	env := []string{
		"REDIS_URL=" + *redisURL, "UPSTREAM_URL=" + up + "/api", "IMGFLOW_SECRET=loadtest-secret-0123456789",
		"IMGFLOW_PUBLIC_URL=http://" + apiAddr, "IMGFLOW_ALLOW_HOSTS=" + strings.TrimPrefix(up, "http://"), "IMGFLOW_ADDR=" + apiAddr,
		"IMGFLOW_CONCURRENCY=64",
		// One key sends every request: the per-key cap on unfinished jobs
		// would answer 429 and measure the policy, not the API.
		"IMGFLOW_MAX_JOBS_PER_KEY=0",
		// Each process's ops listener on a free port (several workers run).
		"IMGFLOW_OPS_ADDR=127.0.0.1:0",
	}
	api := "http://" + apiAddr
	body := []byte(`{"image_base64":"` + base64.StdEncoding.EncodeToString(png) + `"}`)

	fmt.Printf("load test: %s per row, serve + work (concurrency 64) on %s, stub upstream; %s\n\n", *duration, *redisURL, loadavg())
	profile := func(name string) string {
		if *profileDir == "" {
			return ""
		}
		return filepath.Join(*profileDir, name+".prof")
	}
	serve := start(bin, "serve", env, profile("serve"))
	waitHealthy(api)
	work := start(bin, "work", env, profile("work"))
	ids := createJobs(api, body, 200, true)

	fmt.Println("| Request | Clients | req/s | p50 ms | p99 ms | errors |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, c := range []int{1, 10, 100} {
		row("POST /v1/jobs", c, attack(post(api+"/v1/jobs", body), c, *duration))
		drained(rdb) // the next rows must not compete with that backlog
		row("GET /v1/jobs/{id}", c, attack(get(api, ids), c, *duration))
		row("POST /v1/jobs?wait=25", c, attack(post(api+"/v1/jobs?wait=25", body), c, *duration))
	}
	stop(work)
	stop(serve)

	// Queue depth: the worker is stopped so that jobs stay queued. The
	// jobs take an image URL (on the stub), so they hold no input blob.
	flushAll(rdb)
	serve = start(bin, "serve", env, "")
	waitHealthy(api)
	urlBody := []byte(`{"image_url":"` + up + `/image.png"}`)
	fmt.Printf("\n| Jobs queued | Redis bytes per queued job | POST req/s, p50/p99 ms (10 clients) | GET req/s, p50/p99 ms (10 clients) | drain: jobs/s (worker, concurrency 64) |\n")
	fmt.Println("|---:|---:|---|---|---:|")
	for _, n := range fills {
		flushAll(rdb)
		before := usedMemory(rdb)
		ids := createJobs(api, urlBody, n, false)
		perJob := float64(usedMemory(rdb)-before) / float64(n)
		p := attack(post(api+"/v1/jobs", urlBody), 10, *duration)
		g := attack(get(api, ids[:min(len(ids), 1000)]), 10, *duration)
		queued := queueLen(rdb)
		t0 := time.Now()
		work := start(bin, "work", env, "")
		drained(rdb)
		drain := float64(queued) / time.Since(t0).Seconds()
		stop(work)
		failed += errorsOf(p) + errorsOf(g)
		fmt.Printf("| %d | %.0f | %.0f, %.1f/%.1f (%d errors) | %.0f, %.1f/%.1f (%d errors) | %.0f |\n", n, perJob,
			p.Throughput, ms(p.Latencies.P50), ms(p.Latencies.P99), errorsOf(p),
			g.Throughput, ms(g.Latencies.P50), ms(g.Latencies.P99), errorsOf(g), drain)
	}
	stop(serve)
	flushAll(rdb)
	fmt.Printf("\n%s at the end\n", loadavg())
	if failed > 0 {
		log.Fatalf("%d requests failed", failed)
	}
}

// attack runs targeter with c clients as fast as they go for d.
func attack(t vegeta.Targeter, c int, d time.Duration) *vegeta.Metrics {
	a := vegeta.NewAttacker(vegeta.Workers(uint64(c)), vegeta.MaxWorkers(uint64(c)),
		vegeta.Connections(c), vegeta.KeepAlive(true), vegeta.Timeout(30*time.Second))
	var m vegeta.Metrics
	for res := range a.Attack(t, vegeta.Rate{Freq: 0}, d, "") {
		m.Add(res)
	}
	m.Close()
	return &m
}

// failed counts failed requests over the run; any makes the exit status 1.
var failed int

func row(name string, c int, m *vegeta.Metrics) {
	failed += errorsOf(m)
	fmt.Printf("| %s | %d | %.0f | %.1f | %.1f | %d of %d |\n", name, c, m.Throughput,
		ms(m.Latencies.P50), ms(m.Latencies.P99), errorsOf(m), m.Requests)
}

func errorsOf(m *vegeta.Metrics) int {
	return int(m.Requests) - int(m.Success*float64(m.Requests)+0.5)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func header() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {apiKey}}
}

func post(url string, body []byte) vegeta.Targeter {
	return vegeta.NewStaticTargeter(vegeta.Target{Method: "POST", URL: url, Body: body, Header: header()})
}

// get asks for the jobs of ids in turn.
func get(api string, ids []string) vegeta.Targeter {
	var n atomic.Uint64
	return func(t *vegeta.Target) error {
		*t = vegeta.Target{Method: "GET", URL: api + "/v1/jobs/" + ids[n.Add(1)%uint64(len(ids))], Header: header()}
		return nil
	}
}

// createJobs posts n jobs, 32 at a time, and returns their ids; wait makes
// each wait for its result.
func createJobs(api string, body []byte, n int, wait bool) []string {
	url := api + "/v1/jobs"
	if wait {
		url += "?wait=25"
	}
	ids := make([]string, n)
	var next atomic.Int64
	done := make(chan struct{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	for range 32 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header = header()
				res, err := client.Do(req)
				if err != nil {
					log.Fatal(err)
				}
				var out struct {
					ID string `json:"id"`
				}
				json.NewDecoder(res.Body).Decode(&out)
				res.Body.Close()
				if res.StatusCode >= 300 || out.ID == "" {
					log.Fatalf("create job: %d", res.StatusCode)
				}
				ids[i] = out.ID
			}
		}()
	}
	for range 32 {
		<-done
	}
	return ids
}

// startStub is the compression API answering at once, plus one image to
// fetch for image_url jobs.
func startStub(img []byte) string {
	answer, _ := json.Marshal(map[string]any{
		"success": true, "job_id": "00000000-0000-4000-8000-000000000000", "status": "completed",
		"message": "Image compressed successfully", "compressed_data": base64.StdEncoding.EncodeToString(img),
		"original_size": len(img), "compressed_size": len(img), "compression_ratio": 1.0, "credits_remaining": 1000000,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/image.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(img)
		case "/api/validate":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"valid":true,"user_id":"u","subscription_type":"Paid","credits_remaining":1000000,"max_image_size":10485760}`)
		case "/api/health":
			io.WriteString(w, `{"status":"healthy"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
		}
	}))
	return "http://" + ln.Addr().String()
}

func buildImgflow() string {
	dir, err := os.MkdirTemp("", "imgflow-loadtest")
	if err != nil {
		log.Fatal(err)
	}
	bin := filepath.Join(dir, "imgflow")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("go build (run from the repository root): %v", err)
	}
	return bin
}

// start runs `imgflow <what>` with env; logs go to a file beside the binary.
func start(bin, what string, env []string, profile string) *exec.Cmd {
	cmd := exec.Command(bin, what)
	cmd.Env = append(os.Environ(), env...)
	if profile != "" {
		cmd.Env = append(cmd.Env, "IMGFLOW_CPU_PROFILE="+profile)
	}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(bin), what+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	return cmd
}

// stop ends a command gracefully (SIGINT), so its profile is written.
func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
}

func waitHealthy(api string) {
	for range 200 {
		if res, err := http.Get(api + "/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatal("imgflow serve did not come up")
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func flushAll(rdb *redis.Client) {
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		log.Fatal(err)
	}
}

func usedMemory(rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// queueLen is the number of compress tasks waiting on asynq's default
// queue name, which serve and work use here.
func queueLen(rdb *redis.Client) int64 {
	return rdb.LLen(context.Background(), asynqext.QueueOf("imgflow").Pending()).Val()
}

// drained waits until the worker has taken every queued task and finished
// the running ones.
func drained(rdb *redis.Client) {
	for queueLen(rdb) > 0 || rdb.LLen(context.Background(), asynqext.QueueOf("imgflow").Active()).Val() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}
