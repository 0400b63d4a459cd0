// Package stack runs a whole imgflow on loopback for the chart's live
// checks (cmd/livealert) and measurements (cmd/jobcost): a redis-server of
// its own, `imgflow upstream` with a new key, `imgflow serve` and
// `imgflow work`, each on a free 127.0.0.1 port, with a temp directory for
// their logs. Stop ends every process it started, by its own pid, and
// searches every log for the secrets the processes hold.
package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
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
)

// Options say what to run.
type Options struct {
	Imgflow     string        // the imgflow binary
	RedisServer string        // default "redis-server"
	Queue       string        // IMGFLOW_QUEUE; default imgflow
	Dispatch    string        // IMGFLOW_DISPATCH; default imgflow's (fair)
	Concurrency int           // IMGFLOW_CONCURRENCY of work; default 10
	Latency     time.Duration // UPSTREAM_LATENCY of the reference upstream
	// ShutdownTimeout is work's IMGFLOW_SHUTDOWN_TIMEOUT; default 10s.
	ShutdownTimeout time.Duration
	// DedupeOff sets IMGFLOW_DEDUPE=off, so that jobs of one image each
	// call the upstream as distinct images would.
	DedupeOff bool
	// VersityGW, when set, is a versitygw binary: blobs then live in its
	// bucket (IMGFLOW_BLOB_STORE=s3://...), reached through a proxy that
	// counts the requests (S3Requests).
	VersityGW string
	// KeepLogs leaves the processes' logs (*.log) in Dir after Stop, for
	// CI's search of the whole run (.ci/secrets.sh); the rest is removed.
	KeepLogs bool
}

// Stack is a running imgflow.
type Stack struct {
	Dir       string
	RedisPort int
	API       string // http://127.0.0.1:PORT of serve
	ServeOps  string // http://127.0.0.1:PORT of serve's ops listener: /metrics, /health, /ready
	WorkPort  int    // work's ops listener: /metrics, /health, /ready
	Key       string // an API key of the reference upstream

	opts     Options
	redisURL string
	s3       *s3Counter
	appEnv   []string
	workEnv  []string
	procs    map[string]*exec.Cmd
	all      []*exec.Cmd
	secrets  []heldSecret // what no log line may carry
}

// heldSecret is a secret a process runs with, and what to call it in a
// report (never its value).
type heldSecret struct{ kind, value string }

const secret = "stack-secret-0123456789abcdef"

// Start runs redis-server, upstream, serve and work and waits until each
// answers.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.RedisServer == "" {
		o.RedisServer = "redis-server"
	}
	if o.Queue == "" {
		o.Queue = "imgflow"
	}
	if o.Concurrency == 0 {
		o.Concurrency = 10
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	dir, err := os.MkdirTemp("", "imgflow-stack-")
	if err != nil {
		return nil, err
	}
	s := &Stack{Dir: dir, opts: o, procs: map[string]*exec.Cmd{}}
	s.RedisPort = FreePort()
	upPort, apiPort, serveOpsPort := FreePort(), FreePort(), FreePort()
	s.WorkPort = FreePort()
	redisURL := fmt.Sprintf("redis://127.0.0.1:%d/0", s.RedisPort)
	s.redisURL = redisURL
	s.API = fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	s.ServeOps = fmt.Sprintf("http://127.0.0.1:%d", serveOpsPort)
	if err := s.start("redis", nil, o.RedisServer, "--bind", "127.0.0.1", "--port", strconv.Itoa(s.RedisPort),
		"--save", "", "--appendonly", "no", "--dir", dir); err != nil {
		return s, err
	}
	if err := WaitFor(ctx, "redis-server", func() (bool, error) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.RedisPort), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	}); err != nil {
		return s, err
	}
	if err := s.start("upstream", []string{"REDIS_URL=" + redisURL, fmt.Sprintf("IMGFLOW_UPSTREAM_ADDR=127.0.0.1:%d", upPort),
		"UPSTREAM_LATENCY=" + o.Latency.String()}, o.Imgflow, "upstream"); err != nil {
		return s, err
	}
	if err := WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/api/health", upPort)); err != nil {
		return s, fmt.Errorf("imgflow upstream: %w", err)
	}
	out, err := exec.Command(o.Imgflow, "keys", "create", "--redis", redisURL, "--paid", "1000000").CombinedOutput()
	if err != nil {
		return s, fmt.Errorf("imgflow keys create: %v: %s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "api_key: "); ok {
			s.Key = strings.TrimSpace(k)
		}
	}
	if s.Key == "" {
		return s, fmt.Errorf("imgflow keys create printed no api_key: %s", out)
	}
	s.secrets = append(s.secrets, heldSecret{"IMGFLOW_SECRET", secret}, heldSecret{"the API key", s.Key})
	s.appEnv = []string{
		"REDIS_URL=" + redisURL,
		fmt.Sprintf("UPSTREAM_URL=http://127.0.0.1:%d/api", upPort),
		"IMGFLOW_SECRET=" + secret,
		"IMGFLOW_PUBLIC_URL=" + s.API,
		"IMGFLOW_QUEUE=" + o.Queue,
		"IMGFLOW_MAX_JOBS_PER_KEY=0",
	}
	if o.DedupeOff {
		s.appEnv = append(s.appEnv, "IMGFLOW_DEDUPE=off")
	}
	if o.Dispatch != "" {
		s.appEnv = append(s.appEnv, "IMGFLOW_DISPATCH="+o.Dispatch)
	}
	if o.VersityGW != "" {
		env, err := s.startS3(ctx)
		if err != nil {
			return s, err
		}
		s.appEnv = append(s.appEnv, env...)
	}
	s.workEnv = append(append([]string{}, s.appEnv...),
		fmt.Sprintf("IMGFLOW_OPS_ADDR=127.0.0.1:%d", s.WorkPort),
		"IMGFLOW_SHUTDOWN_TIMEOUT="+o.ShutdownTimeout.String(),
		"IMGFLOW_CONCURRENCY="+strconv.Itoa(o.Concurrency))
	if err := s.start("serve", append(append([]string{}, s.appEnv...), fmt.Sprintf("IMGFLOW_ADDR=127.0.0.1:%d", apiPort),
		fmt.Sprintf("IMGFLOW_OPS_ADDR=127.0.0.1:%d", serveOpsPort)), o.Imgflow, "serve"); err != nil {
		return s, err
	}
	if err := WaitHTTP(ctx, s.ServeOps+"/ready"); err != nil {
		return s, fmt.Errorf("imgflow serve: %w", err)
	}
	return s, s.StartWork(ctx)
}

// CreditsRemaining is the key's balance in the reference upstream's ledger
// (imgflow keys show).
func (s *Stack) CreditsRemaining() (int, error) {
	cmd := exec.Command(s.opts.Imgflow, "keys", "show", "--redis", s.redisURL)
	cmd.Env = append(os.Environ(), "IMGFLOW_API_KEY="+s.Key)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("imgflow keys show: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "credits_remaining: "); ok {
			return strconv.Atoi(strings.Fields(v)[0])
		}
	}
	return 0, fmt.Errorf("imgflow keys show printed no credits_remaining: %s", out)
}

// StartWork starts `imgflow work` and waits for its /health.
func (s *Stack) StartWork(ctx context.Context) error {
	if err := s.start("work", s.workEnv, s.opts.Imgflow, "work"); err != nil {
		return err
	}
	if err := WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", s.WorkPort)); err != nil {
		return fmt.Errorf("imgflow work: %w", err)
	}
	return nil
}

// StopWork sends work SIGTERM, as Kubernetes does, and waits for it to exit.
func (s *Stack) StopWork(d time.Duration) error {
	c := s.procs["work"]
	c.Process.Signal(syscall.SIGTERM)
	return waitExit(c, d)
}

// StopRedis stops the redis-server (SIGTERM) and waits for it to exit.
func (s *Stack) StopRedis(d time.Duration) error {
	c := s.procs["redis"]
	c.Process.Signal(syscall.SIGTERM)
	return waitExit(c, d)
}

// PID is the pid of a running process: redis, upstream, serve or work.
func (s *Stack) PID(name string) int { return s.procs[name].Process.Pid }

func (s *Stack) start(name string, env []string, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(s.Dir, fmt.Sprintf("%s-%d.log", name, len(s.all))))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.procs[name] = cmd
	s.all = append(s.all, cmd)
	return nil
}

// Stop ends every process the stack started (SIGTERM, then SIGKILL after
// 15 s), prints their logs' last lines when failed, searches every log for
// the secrets the processes run with (IMGFLOW_SECRET, the API key, the S3
// secret key) and removes Dir (all but the logs with KeepLogs). The error
// names each secret found and where, never the secret.
func (s *Stack) Stop(failed bool) error {
	for i := len(s.all) - 1; i >= 0; i-- {
		c := s.all[i]
		if c.ProcessState != nil {
			continue
		}
		c.Process.Signal(syscall.SIGTERM)
		if waitExit(c, 15*time.Second) != nil {
			c.Process.Kill()
			c.Wait()
		}
	}
	logs, _ := filepath.Glob(filepath.Join(s.Dir, "*.log"))
	if failed {
		for _, f := range logs {
			raw, _ := os.ReadFile(f)
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			lines = lines[max(0, len(lines)-15):]
			fmt.Fprintf(os.Stderr, "--- %s (last lines)\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
		}
	}
	leaks := s.secretsIn(logs)
	if s.s3 != nil {
		s.s3.srv.Close()
	}
	if s.opts.KeepLogs {
		entries, _ := os.ReadDir(s.Dir)
		for _, e := range entries {
			if e.IsDir() || filepath.Ext(e.Name()) != ".log" {
				os.RemoveAll(filepath.Join(s.Dir, e.Name()))
			}
		}
		fmt.Fprintf(os.Stderr, "stack: the processes' logs are kept (logs in %s)\n", s.Dir)
	} else {
		os.RemoveAll(s.Dir)
	}
	if len(leaks) > 0 {
		return fmt.Errorf("secrets in the processes' logs: %s", strings.Join(leaks, "; "))
	}
	return nil
}

// secretsIn names each held secret found in the logs: kind, file and line
// numbers. versitygw's own log is left out: it is not imgflow, and it is
// given its key on its command line.
func (s *Stack) secretsIn(logs []string) []string {
	var found []string
	for _, f := range logs {
		if strings.HasPrefix(filepath.Base(f), "versitygw-") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			found = append(found, fmt.Sprintf("%s unreadable: %v", filepath.Base(f), err))
			continue
		}
		lines := strings.Split(string(raw), "\n")
		for _, sec := range s.secrets {
			var at []string
			for i, l := range lines {
				if strings.Contains(l, sec.value) {
					at = append(at, strconv.Itoa(i+1))
				}
			}
			if len(at) > 0 {
				found = append(found, fmt.Sprintf("%s in %s (lines %s)", sec.kind, filepath.Base(f), strings.Join(at[:min(len(at), 5)], ",")))
			}
		}
	}
	return found
}

func waitExit(c *exec.Cmd, d time.Duration) error {
	if c.ProcessState != nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(d):
		return errors.New("still running")
	}
}

// FreePort is a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func FreePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Client is the HTTP client of the checks.
var Client = &http.Client{Timeout: 30 * time.Second}

// WaitHTTP waits for a 200 from u.
func WaitHTTP(ctx context.Context, u string) error {
	return WaitFor(ctx, u, func() (bool, error) {
		resp, err := Client.Get(u)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// WaitFor polls ok every 200 ms until it is true, it errs, or ctx ends.
func WaitFor(ctx context.Context, what string, ok func() (bool, error)) error {
	for {
		done, err := ok()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// CreateJob posts a job with the image as base64 and returns its id.
func (s *Stack) CreateJob(img []byte) (string, error) {
	body, _ := json.Marshal(map[string]string{"image_base64": base64.StdEncoding.EncodeToString(img)})
	req, _ := http.NewRequest(http.MethodPost, s.API+"/v1/jobs", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", s.Key)
	resp, err := Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST /v1/jobs: %d %s", resp.StatusCode, raw)
	}
	var j struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &j); err != nil || j.ID == "" {
		return "", fmt.Errorf("POST /v1/jobs: no id in %s", raw)
	}
	return j.ID, nil
}

// JobStatus is a job's status ("" when it could not be read).
func (s *Stack) JobStatus(id string) string {
	req, _ := http.NewRequest(http.MethodGet, s.API+"/v1/jobs/"+id, nil)
	req.Header.Set("X-API-Key", s.Key)
	resp, err := Client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var j struct {
		Status string `json:"status"`
	}
	json.NewDecoder(resp.Body).Decode(&j)
	return j.Status
}

// Redis sends one command in RESP and returns the reply's first line, so
// the checks need no client library.
func (s *Stack) Redis(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.RedisPort), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c, "$%d\r\n%s\r\n", len(a), a)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// LLEN is the length of a list.
func (s *Stack) LLEN(key string) (int, error) {
	line, err := s.Redis("LLEN", key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(line, ":"))
	if err != nil || !strings.HasPrefix(line, ":") {
		return 0, fmt.Errorf("LLEN %s: %q", key, line)
	}
	return n, nil
}

// CPUSeconds is the user + system CPU a process used so far
// (/proc/PID/stat, clock ticks of 100 Hz as on Linux).
func CPUSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields count from after its ")".
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100, nil
}
