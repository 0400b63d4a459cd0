package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
)

// proc is one process of the system, restartable.
type proc struct {
	name string
	args []string
	env  []string
	path string // its log file
	log  *os.File
	cmd  *exec.Cmd
	// kills are the log's sizes when the process was SIGKILLed: each
	// ends one incarnation's lines.
	kills []int64
}

// logSize is how many bytes the process's log holds now.
func (p *proc) logSize() int64 {
	fi, err := os.Stat(p.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// kill sends SIGKILL, waits for the exit and notes where its log ended.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	p.kills = append(p.kills, p.logSize())
}

func (p *proc) start() error {
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd = cmd
	return nil
}

// signal sends sig to the process and waits for it to exit.
func (p *proc) signal(sig syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(sig)
	p.cmd.Wait()
	p.cmd = nil
}

// system is every process of one run and what the client needs.
type system struct {
	dir      string
	redis    *proc
	redisURL string
	upstream *proc
	serve    *proc
	workers  []*proc
	api      string
	rdb      *redis.Client
	ledger   *refupstream.Ledger
	key      string
	credits  int64 // balance before the run
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startSystem(ctx context.Context, bin, dir string, p profile) (*system, error) {
	ports := make([]int, 3)
	for i := range ports {
		var err error
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	logf := func(name string) *os.File {
		f, _ := os.Create(filepath.Join(dir, name+".log"))
		return f
	}
	logPath := func(name string) string { return filepath.Join(dir, name+".log") }
	s := &system{dir: dir, redisURL: fmt.Sprintf("redis://127.0.0.1:%d/0", ports[0]),
		api: fmt.Sprintf("http://127.0.0.1:%d", ports[2])}
	s.redis = &proc{name: "redis", log: logf("redis"), path: logPath("redis"), args: []string{"redis-server",
		"--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", p.appendfsync, "--save", ""}}
	if err := s.redis.start(); err != nil {
		return nil, err
	}
	s.rdb = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", ports[0])})
	if err := waitFor(ctx, func() bool { return s.rdb.Ping(ctx).Err() == nil }); err != nil {
		s.stop()
		return nil, fmt.Errorf("redis-server did not answer: %w", err)
	}
	s.ledger = refupstream.NewLedger(s.rdb, refupstream.DefaultPrefix, nil)
	key, acct, err := s.ledger.CreateAccount(ctx, int64(p.jobs+(p.batches+p.serveKills)*batchItems)*3)
	if err != nil {
		s.stop()
		return nil, err
	}
	s.key, s.credits = key, acct.CreditsRemaining

	upstreamURL := fmt.Sprintf("http://127.0.0.1:%d/api", ports[1])
	s.upstream = &proc{name: "upstream", log: logf("upstream"), path: logPath("upstream"), args: []string{bin, "upstream",
		"--addr", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--redis", s.redisURL, "--fail-rate", p.failRate,
		"--latency", p.latency.String(), "--idempotency=" + strconv.FormatBool(p.idempotency)}}
	env := []string{"REDIS_URL=" + s.redisURL, "UPSTREAM_URL=" + upstreamURL, "IMGFLOW_PUBLIC_URL=" + s.api,
		"IMGFLOW_SECRET=faults-suite-secret-0123456789", "IMGFLOW_ADDR=" + fmt.Sprintf("127.0.0.1:%d", ports[2]),
		// One key sends every job, and a backlog builds while workers are
		// down: the per-key cap would refuse jobs the suite means to count.
		"IMGFLOW_MAX_JOBS_PER_KEY=0",
		// The batches' callback receiver listens on loopback.
		"IMGFLOW_ALLOW_HOSTS=127.0.0.1",
		// Every process has an ops listener; several on one machine each
		// take a free port.
		"IMGFLOW_OPS_ADDR=127.0.0.1:0"}
	s.serve = &proc{name: "serve", log: logf("serve"), path: logPath("serve"), env: env, args: []string{bin, "serve"}}
	for i := range p.workers {
		// worker0, the first one killed, runs 32 slots: two asynq servers
		// in one process (worker.Config.Fetchers), killed together.
		concurrency := "8"
		if i == 0 {
			concurrency = "32"
		}
		// At debug a worker logs each upstream call's start
		// (msg=compressing): the suite kills workers while one is in
		// flight, and reads who called for which job.
		name := fmt.Sprintf("worker%d", i)
		s.workers = append(s.workers, &proc{name: name, log: logf(name), path: logPath(name),
			env: env, args: []string{bin, "work", "--concurrency", concurrency, "--log-level", "debug"}})
	}
	for _, pr := range append([]*proc{s.upstream, s.serve}, s.workers...) {
		if err := pr.start(); err != nil {
			s.stop()
			return nil, err
		}
	}
	if err := waitFor(ctx, func() bool { return get(s.api+"/health") == http.StatusOK }); err != nil {
		s.stop()
		return nil, fmt.Errorf("serve never became ready (see %s): %w", dir, err)
	}
	return s, nil
}

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// restartRedis stops Redis, the way an operator's restart does (SIGTERM:
// it writes the append-only file out) or as a crash does (SIGKILL: what
// was not yet fsynced under appendfsync everysec may be lost), and starts
// it again on the same port and data, after down.
func (s *system) restartRedis(ctx context.Context, sig syscall.Signal, down time.Duration) error {
	s.redis.signal(sig)
	time.Sleep(down)
	if err := s.redis.start(); err != nil {
		return err
	}
	return waitFor(ctx, func() bool { return s.rdb.Ping(ctx).Err() == nil })
}

func (s *system) stop() {
	for _, pr := range append([]*proc{s.serve, s.upstream}, s.workers...) {
		if pr != nil {
			pr.signal(syscall.SIGKILL)
		}
	}
	if s.rdb != nil {
		s.rdb.Close()
	}
	if s.redis != nil {
		s.redis.signal(syscall.SIGKILL)
	}
}

func waitFor(ctx context.Context, cond func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("not within 30s")
}

// killWhenBusy SIGKILLs w as soon as its log shows an upstream call
// starting (msg=compressing, at debug) after now: with the upstream's
// latency, the call is then in flight. It returns that job's id, or ""
// when none started within 20 s (w is killed anyway).
func (s *system) killWhenBusy(ctx context.Context, w *proc) string {
	from := w.logSize()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if id := lastCallSince(w.path, from); id != "" {
			w.kill()
			return id
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.kill()
	return ""
}

// lastCallSince is the job id of the last msg=compressing line written to
// path after offset from.
func lastCallSince(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, from, 1<<30))
	if err != nil {
		return ""
	}
	id := ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "msg=compressing") {
			if m := jobIDAttr.FindStringSubmatch(line); m != nil {
				id = m[1]
			}
		}
	}
	return id
}
