// Command jobcost measures what one job costs each process of a deployment,
// for docs/capacity.md: it runs imgflow as the chart does (separate serve,
// work and the reference upstream on a redis-server of its own, all on
// loopback; internal/stack; IMGFLOW_DEDUPE=off so that every job is
// compressed, as distinct images would be), queues -jobs jobs of one image as base64 from
// -clients clients at once (POST /v1/jobs, no wait), and waits until the
// worker has finished them all. It prints the CPU seconds (user + system,
// /proc) each process used over the run, per job and as jobs per core, and
// Redis's commands per job (INFO stats; the reference upstream's ledger
// shares that Redis and is counted too).
//
//	go run ./cmd/jobcost -imgflow /path/to/imgflow -image ../../../fixtures/images/photo.jpg
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imgflow/imgflow/deploy/helm/chartcheck/internal/stack"
)

func main() {
	bin := flag.String("imgflow", "", "imgflow binary (required)")
	image := flag.String("image", "", "image file each job sends (required)")
	jobs := flag.Int("jobs", 2000, "jobs to run")
	clients := flag.Int("clients", 16, "clients posting at once")
	concurrency := flag.Int("concurrency", 32, "IMGFLOW_CONCURRENCY of the worker")
	latency := flag.Duration("latency", 0, "UPSTREAM_LATENCY of the reference upstream")
	versitygw := flag.String("versitygw", "", "versitygw binary: blobs in its bucket (S3), requests counted")
	flag.Parse()
	if *bin == "" || *image == "" {
		flag.Usage()
		os.Exit(2)
	}
	img, err := os.ReadFile(*image)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, stack.Options{Imgflow: *bin, Concurrency: *concurrency, Latency: *latency, DedupeOff: true, VersityGW: *versitygw})
	if err != nil {
		if s != nil {
			s.Stop(true)
		}
		log.Fatal(err)
	}
	err = measure(ctx, s, img, *jobs, *clients, *concurrency, *latency)
	if serr := s.Stop(err != nil); err == nil {
		err = serr
	}
	if err != nil {
		log.Fatal(err)
	}
}

var procs = []string{"serve", "work", "upstream", "redis"}

func measure(ctx context.Context, s *stack.Stack, img []byte, jobs, clients, concurrency int, latency time.Duration) error {
	// Warm up: connections, pools, the key check cache.
	if err := post(s, img, 50, clients); err != nil {
		return err
	}
	if err := waitCompleted(ctx, s, 50); err != nil {
		return err
	}
	cpu0, err := cpus(s)
	if err != nil {
		return err
	}
	s3before := s.S3Requests()
	cmds0, err := redisCommands(s)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := post(s, img, jobs, clients); err != nil {
		return err
	}
	posted := time.Since(start)
	if err := waitCompleted(ctx, s, 50+jobs); err != nil {
		return err
	}
	wall := time.Since(start)
	cpu1, err := cpus(s)
	if err != nil {
		return err
	}
	cmds1, err := redisCommands(s)
	if err != nil {
		return err
	}
	fmt.Printf("%d jobs of %d bytes (base64 JSON), %d clients, worker concurrency %d, upstream latency %v\n", jobs, len(img), clients, concurrency, latency)
	fmt.Printf("posted in %.1f s (%.0f POST/s); all completed in %.1f s (%.0f jobs/s end to end)\n\n",
		posted.Seconds(), float64(jobs)/posted.Seconds(), wall.Seconds(), float64(jobs)/wall.Seconds())
	fmt.Println("| process | CPU s | CPU ms per job | jobs/s per core |")
	fmt.Println("|---|---:|---:|---:|")
	for _, p := range procs {
		d := cpu1[p] - cpu0[p]
		fmt.Printf("| %s | %.2f | %.2f | %.0f |\n", p, d, 1000*d/float64(jobs), float64(jobs)/d)
	}
	if len(s.S3Requests()) > 0 {
		fmt.Printf("\nS3 requests per job (counted by a proxy before versitygw; no file downloads): %s\n", stack.FormatS3(s3before, s.S3Requests(), jobs))
	}
	fmt.Printf("\nRedis commands per job (imgflow and the reference upstream's ledger, INFO stats): %.1f\n", float64(cmds1-cmds0)/float64(jobs))
	return nil
}

func cpus(s *stack.Stack) (map[string]float64, error) {
	out := map[string]float64{}
	for _, p := range procs {
		v, err := stack.CPUSeconds(s.PID(p))
		if err != nil {
			return nil, err
		}
		out[p] = v
	}
	return out, nil
}

// post creates n jobs from clients goroutines.
func post(s *stack.Stack, img []byte, n, clients int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := s.CreateJob(img); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// waitCompleted waits until the worker's imgflow_jobs_completed_total
// reaches n (one scrape of the worker every 200 ms).
func waitCompleted(ctx context.Context, s *stack.Stack, n int) error {
	u := fmt.Sprintf("http://127.0.0.1:%d/metrics", s.WorkPort)
	return stack.WaitFor(ctx, fmt.Sprintf("%d jobs completed", n), func() (bool, error) {
		resp, err := http.Get(u)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "imgflow_jobs_completed_total "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f >= float64(n), nil
			}
		}
		return false, nil
	})
}

// redisCommands is INFO stats' total_commands_processed, read by a script
// that answers it as an integer (one RESP line).
func redisCommands(s *stack.Stack) (int64, error) {
	line, err := s.Redis("EVAL", `return tonumber(string.match(redis.call('INFO', 'stats'), 'total_commands_processed:(%d+)'))`, "0")
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(line, ":") {
		return 0, fmt.Errorf("INFO stats: %q", line)
	}
	return strconv.ParseInt(line[1:], 10, 64)
}
