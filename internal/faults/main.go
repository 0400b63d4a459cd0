// Command faults is imgflow's standing fault suite: it runs the whole system
// as real processes on loopback (its own redis-server with the append-only
// file on, the reference upstream failing a share of calls, serve and
// workers, all from one imgflow binary built once), sends jobs at a rate
// with Idempotency-Keys (retrying with the same key), and meanwhile kills
// workers with SIGKILL, restarts Redis and kills serve. At the end it checks
// what a user relies on and exits 1 if any of it broke:
//
//   - every accepted job reached completed or failed;
//   - credits charged by the upstream (its ledger) equal completed jobs, or
//     each extra charge is accounted for by a job marked charge_uncertain
//     (listed with its id);
//   - no client saw a 5xx other than 503;
//   - every retry with an Idempotency-Key got the same job id.
//
// Run it from the repository root:
//
//	go run ./internal/faults -profile short   # ~200 jobs, one fault of each kind (CI)
//	go run ./internal/faults -profile long    # 1,000 jobs, repeated faults
//
// It needs redis-server on PATH and writes only under a temporary directory.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// profile is one shape of run.
type profile struct {
	jobs        int
	rate        float64 // jobs per second
	workers     int
	failRate    string
	workerKills int
	redisRests  int
	serveKills  int
}

var profiles = map[string]profile{
	"short": {jobs: 200, rate: 20, workers: 2, failRate: "0.2", workerKills: 1, redisRests: 1, serveKills: 1},
	"long":  {jobs: 1000, rate: 20, workers: 3, failRate: "0.2", workerKills: 3, redisRests: 2, serveKills: 2},
}

func main() {
	name := flag.String("profile", "short", "short (about 200 jobs, one fault of each kind) or long (1,000 jobs, repeated faults)")
	keep := flag.Bool("keep", false, "keep the temporary directory (logs of every process)")
	flag.Parse()
	p, ok := profiles[*name]
	if !ok {
		log.Fatalf("unknown profile %q: short or long", *name)
	}
	dir, err := os.MkdirTemp("", "imgflow-faults-")
	if err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	start := time.Now()
	ok, err = run(p, dir)
	fmt.Printf("faults: profile %s took %s (logs in %s)\n", *name, time.Since(start).Round(time.Second), dir)
	if err != nil {
		fmt.Println("faults: ERROR:", err)
		os.Exit(1)
	}
	if !ok {
		fmt.Println("faults: FAILED")
		os.Exit(1)
	}
	fmt.Println("faults: PASSED")
}

func run(p profile, dir string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "imgflow")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return false, fmt.Errorf("go build (run from the repository root): %w", err)
	}
	sys, err := startSystem(ctx, bin, dir, p)
	if err != nil {
		return false, err
	}
	defer sys.stop()
	return sys.exercise(ctx, p)
}
