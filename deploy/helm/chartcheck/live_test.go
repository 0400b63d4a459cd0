package chartcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The operator's render, run: serve and work get exactly the environment
// their rendered Deployments give them (the ConfigMap, their own values,
// the Secrets' keys), with only what a private network would supply put in
// on loopback: REDIS_URL (a passworded redis-server), IMGFLOW_SECRET, the
// upstream's address, the listen ports (two pods on one host), the allow
// list (the image server is on 127.0.0.1) and IMGFLOW_JOB_TTL=1h (as
// config.jobTTL=1h renders it). Then what a cluster does to them:
//
//   - Redis unreachable at start: both wait, alive (liveness 200), no line
//     carries the password; once Redis answers a job completes;
//   - caller mistakes (a 404 URL, bytes that are not an image, a callback
//     answering 410) leave asynq's archive empty on both queues;
//   - a job record lives at most IMGFLOW_JOB_TTL; /metrics is not on the
//     public port;
//   - the compression API stopped: serve stays ready and polls answer 200;
//   - Redis frozen (SIGSTOP) longer than work's liveness window: every
//     liveness probe of work and serve passes, and a new job completes
//     after it thaws;
//   - no process's log holds the Redis password, IMGFLOW_SECRET or the
//     API key.
func TestTheOperatorsRenderRunsOnLoopback(t *testing.T) {
	bin := os.Getenv("IMGFLOW_BIN")
	if bin == "" {
		t.Fatal("IMGFLOW_BIN is not set: the imgflow binary .ci/helm.sh builds")
	}
	var r *Rendered
	for _, x := range rendered(t) {
		if strings.HasPrefix(x.Name, "operator") {
			r = x
		}
	}
	if r == nil {
		t.Fatal("no operator render")
	}
	serveDep, workDep := component(r, "serve"), component(r, "work")
	workC := workDep.Spec.Template.Spec.Containers[0]
	live := workC.LivenessProbe
	window := time.Duration(live.PeriodSeconds*live.FailureThreshold) * time.Second

	dir := t.TempDir()
	password := "r3d1s-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secret := "live-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-0123456789"
	redisPort, upPort := freePort(t), freePort(t)
	redisURL := fmt.Sprintf("redis://:%s@127.0.0.1:%d/0", password, redisPort)
	upstreamRedis := fmt.Sprintf("redis://:%s@127.0.0.1:%d/1", password, redisPort)
	apiPort, serveOps, workOps := freePort(t), freePort(t), freePort(t)
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)

	stand := map[string]string{
		"UPSTREAM_URL":        fmt.Sprintf("http://127.0.0.1:%d/api", upPort),
		"IMGFLOW_ALLOW_HOSTS": "127.0.0.1",
		"IMGFLOW_JOB_TTL":     "1h",
	}
	secrets := map[string]string{"REDIS_URL": redisURL, "IMGFLOW_SECRET": secret}
	serveEnv := standIns(t, r, serveDep.Spec.Template.Spec.Containers[0], stand, secrets,
		map[string]string{"IMGFLOW_ADDR": fmt.Sprintf("127.0.0.1:%d", apiPort), "IMGFLOW_OPS_ADDR": fmt.Sprintf("127.0.0.1:%d", serveOps)})
	workEnv := standIns(t, r, workC, stand, secrets,
		map[string]string{"IMGFLOW_OPS_ADDR": fmt.Sprintf("127.0.0.1:%d", workOps)})
	queue := serveEnv["IMGFLOW_QUEUE"]

	procs := &processes{t: t, dir: dir}
	defer procs.stopAll()
	procs.start("serve", bin, envList(serveEnv), serveDep.Spec.Template.Spec.Containers[0].Args...)
	procs.start("work", bin, envList(workEnv), workC.Args...)

	// Redis down at start: both wait for it, alive, without exiting.
	serveOpsURL, workOpsURL := fmt.Sprintf("http://127.0.0.1:%d", serveOps), fmt.Sprintf("http://127.0.0.1:%d", workOps)
	waitUntil(t, 30*time.Second, "serve and work answer liveness while Redis is down", func() bool {
		return status(serveOpsURL+"/health", 3*time.Second) == 200 && status(workOpsURL+"/health", 3*time.Second) == 200
	})
	waitUntil(t, 30*time.Second, "work logs that it waits for Redis", func() bool {
		return strings.Contains(strings.ToLower(procs.log("work")), "redis")
	})
	time.Sleep(3 * time.Second)
	for _, name := range []string{"serve", "work"} {
		if procs.exited(name) {
			t.Fatalf("%s exited while Redis was down:\n%s", name, procs.log(name))
		}
	}
	if st := status(serveOpsURL+"/ready", 5*time.Second); st == 200 {
		t.Errorf("serve ready (%d) while Redis is down", st)
	}

	procs.start("redis", "redis-server", nil, "--bind", "127.0.0.1", "--port", strconv.Itoa(redisPort),
		"--requirepass", password, "--save", "", "--appendonly", "no", "--dir", dir)
	waitUntil(t, 90*time.Second, "serve and work ready once Redis answers", func() bool {
		return status(serveOpsURL+"/ready", 4*time.Second) == 200 && status(workOpsURL+"/ready", 4*time.Second) == 200
	})
	upEnv := []string{"REDIS_URL=" + upstreamRedis, fmt.Sprintf("IMGFLOW_UPSTREAM_ADDR=127.0.0.1:%d", upPort)}
	procs.start("upstream", bin, upEnv, "upstream")
	waitUntil(t, 30*time.Second, "the upstream stand-in answers", func() bool {
		return status(fmt.Sprintf("http://127.0.0.1:%d/api/health", upPort), 3*time.Second) == 200
	})
	key := apiKey(t, bin, upstreamRedis)

	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/photo.png":
			http.ServeFile(w, req, filepath.Join(repoRoot, "fixtures", "images", "photo.png"))
		case "/not-an-image.png":
			io.WriteString(w, "these bytes are not an image")
		case "/gone":
			w.WriteHeader(http.StatusGone)
		default:
			http.NotFound(w, req)
		}
	}))
	defer images.Close()

	job := submit(t, api, key, images.URL+"/photo.png", "")
	if job.Status != "completed" {
		t.Fatalf("first job: %s (%s), want completed", job.Status, job.raw)
	}
	if st := status(api+"/metrics", 3*time.Second); st != http.StatusNotFound {
		t.Errorf("GET /metrics on the public port: %d, want 404", st)
	}
	if st := status(serveOpsURL+"/metrics", 3*time.Second); st != 200 {
		t.Errorf("GET /metrics on the ops port: %d, want 200", st)
	}

	// Caller mistakes: failed jobs, a callback answering 410; no dead letter.
	for _, path := range []string{"/missing.png", "/not-an-image.png"} {
		if j := submit(t, api, key, images.URL+path, ""); j.Status != "failed" {
			t.Errorf("%s: job %s (%s), want failed", path, j.Status, j.raw)
		}
	}
	cb := submit(t, api, key, images.URL+"/photo.png", images.URL+"/gone")
	waitUntil(t, 30*time.Second, "the 410 callback recorded", func() bool {
		return strings.Contains(getJob(t, api, key, cb.ID).raw, `"status":"failed"`)
	})
	time.Sleep(2 * time.Second) // time for asynq to archive, were it going to
	for _, q := range []string{queue, queue + "-deliveries"} {
		if n := redisCLI(t, password, redisPort, "ZCARD", "asynq:{"+q+"}:archived"); n != "0" {
			t.Errorf("queue %s: %s archived tasks after caller mistakes, want 0", q, n)
		}
	}

	// The job record's TTL is IMGFLOW_JOB_TTL's.
	keys := strings.Fields(redisCLI(t, password, redisPort, "--scan", "--pattern", "*job:{"+job.ID+"}"))
	if len(keys) != 1 {
		t.Errorf("Redis keys of job %s's record: %v, want one", job.ID, keys)
	}
	for _, k := range keys {
		ttl, err := strconv.Atoi(redisCLI(t, password, redisPort, "TTL", k))
		if err != nil || ttl <= 0 || ttl > 3600 {
			t.Errorf("key %s: TTL %d (%v), want within IMGFLOW_JOB_TTL=1h", k, ttl, err)
		}
	}

	// The compression API stopped: still ready, polls answered.
	procs.stop("upstream")
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if st := status(serveOpsURL+"/ready", 4*time.Second); st != 200 {
			t.Fatalf("serve /ready %d with the compression API stopped, want 200", st)
		}
	}
	if j := getJob(t, api, key, job.ID); j.Status != "completed" {
		t.Errorf("poll with the compression API stopped: %s", j.raw)
	}

	// Redis frozen past work's liveness window: every probe passes.
	procs.signal("redis", syscall.SIGSTOP)
	frozen := time.Now()
	failures := 0
	for time.Since(frozen) < window+10*time.Second {
		for name, ops := range map[string]string{"work": workOpsURL, "serve": serveOpsURL} {
			if st := status(ops+"/health", time.Duration(live.TimeoutSeconds)*time.Second); st != 200 {
				failures++
				t.Errorf("%s liveness %d after %s of Redis frozen", name, st, time.Since(frozen).Round(time.Second))
			}
		}
		time.Sleep(time.Duration(live.PeriodSeconds) * time.Second)
	}
	procs.signal("redis", syscall.SIGCONT)
	if failures > 0 || procs.exited("work") || procs.exited("serve") {
		t.Fatalf("Redis frozen %s (window %s): %d liveness failures; work exited %v, serve exited %v", time.Since(frozen).Round(time.Second), window, failures, procs.exited("work"), procs.exited("serve"))
	}
	procs.start("upstream", bin, upEnv, "upstream")
	waitUntil(t, 30*time.Second, "the upstream stand-in answers again", func() bool {
		return status(fmt.Sprintf("http://127.0.0.1:%d/api/health", upPort), 3*time.Second) == 200
	})
	if j := submit(t, api, key, images.URL+"/photo.png?after-freeze", ""); j.Status != "completed" {
		t.Errorf("a job after Redis thawed: %s (%s), want completed", j.Status, j.raw)
	}

	procs.stopAll()
	for name, l := range procs.logs() {
		for kind, v := range map[string]string{"the Redis password": password, "IMGFLOW_SECRET": secret, "the API key": key} {
			if strings.Contains(l, v) {
				t.Errorf("%s's log holds %s", name, kind)
			}
		}
	}
}

// standIns is the container's rendered environment with the stand-ins
// put in: every Secret key the operator brings must be one of secrets,
// and after it every URL but the public one is on loopback.
func standIns(t *testing.T, r *Rendered, c corev1.Container, stand, secrets, ports map[string]string) map[string]string {
	t.Helper()
	e := env(r, c)
	for k, v := range e {
		if strings.HasPrefix(v, "secret:") || strings.HasPrefix(v, "MISSING:") {
			s, ok := secrets[k]
			if !ok {
				t.Fatalf("%s reads %s from %s: no stand-in for it", c.Name, k, v)
			}
			e[k] = s
		}
	}
	for _, m := range []map[string]string{stand, ports} {
		for k, v := range m {
			if _, ok := e[k]; !ok {
				t.Fatalf("%s: the render has no %s", c.Name, k)
			}
			e[k] = v
		}
	}
	for k, v := range e {
		if k != "IMGFLOW_PUBLIC_URL" && strings.Contains(v, "://") && !strings.Contains(v, "127.0.0.1") && !strings.HasPrefix(v, "redis://") {
			t.Fatalf("%s: %s=%s would leave loopback", c.Name, k, v)
		}
	}
	return e
}

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func status(url string, timeout time.Duration) int {
	c := http.Client{Timeout: timeout}
	res, err := c.Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within %s", what, d)
}

func apiKey(t *testing.T, bin, redisURL string) string {
	t.Helper()
	out, err := exec.Command(bin, "keys", "create", "--redis", redisURL, "--paid", "1000").CombinedOutput()
	if err != nil {
		t.Fatalf("imgflow keys create: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if k, ok := strings.CutPrefix(l, "api_key: "); ok {
			return strings.TrimSpace(k)
		}
	}
	t.Fatal("imgflow keys create printed no api_key")
	return ""
}

type liveJob struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	raw    string
}

func submit(t *testing.T, api, key, imageURL, callbackURL string) liveJob {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"image_url": imageURL, "callback_url": callbackURL})
	if callbackURL == "" {
		body, _ = json.Marshal(map[string]string{"image_url": imageURL})
	}
	req, _ := http.NewRequest("POST", api+"/v1/jobs?wait=25", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	j := doJob(t, req)
	for end := time.Now().Add(90 * time.Second); j.Status != "completed" && j.Status != "failed" && time.Now().Before(end); {
		time.Sleep(time.Second)
		j = getJob(t, api, key, j.ID)
	}
	return j
}

func getJob(t *testing.T, api, key, id string) liveJob {
	t.Helper()
	req, _ := http.NewRequest("GET", api+"/v1/jobs/"+id, nil)
	req.Header.Set("X-API-Key", key)
	return doJob(t, req)
}

func doJob(t *testing.T, req *http.Request) liveJob {
	t.Helper()
	c := http.Client{Timeout: 90 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var j liveJob
	if err := json.Unmarshal(raw, &j); err != nil || res.StatusCode >= 300 || j.ID == "" {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, res.StatusCode, raw)
	}
	j.raw = string(raw)
	return j
}

// redisCLI runs one command against the stand-in Redis, the password in
// REDISCLI_AUTH (never on a command line).
func redisCLI(t *testing.T, password string, port int, args ...string) string {
	t.Helper()
	cmd := exec.Command("redis-cli", append([]string{"-p", strconv.Itoa(port)}, args...)...)
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+password)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redis-cli %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// processes are the ones this test started, each logging to a file of its
// own, stopped by their own pids.
type processes struct {
	t     *testing.T
	dir   string
	cmds  map[string]*exec.Cmd
	done  map[string]chan struct{}
	files map[string]string
	n     int
}

func (p *processes) start(name, bin string, env []string, args ...string) {
	p.t.Helper()
	if p.cmds == nil {
		p.cmds, p.done, p.files = map[string]*exec.Cmd{}, map[string]chan struct{}{}, map[string]string{}
	}
	p.n++
	f, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%s-%d.log", name, p.n)))
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = env
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(done) }()
	p.cmds[name], p.done[name] = cmd, done
	p.files[fmt.Sprintf("%s-%d", name, p.n)] = f.Name()
}

func (p *processes) exited(name string) bool {
	select {
	case <-p.done[name]:
		return true
	default:
		return false
	}
}

func (p *processes) signal(name string, s syscall.Signal) { p.cmds[name].Process.Signal(s) }

func (p *processes) stop(name string) {
	c := p.cmds[name]
	if c == nil || p.exited(name) {
		return
	}
	c.Process.Signal(syscall.SIGCONT)
	c.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done[name]:
	case <-time.After(40 * time.Second):
		c.Process.Kill()
		<-p.done[name]
	}
}

func (p *processes) stopAll() {
	for _, name := range []string{"work", "serve", "upstream", "redis"} {
		p.stop(name)
	}
	if p.t.Failed() {
		for name, l := range p.logs() {
			lines := strings.Split(strings.TrimSpace(l), "\n")
			p.t.Logf("--- %s (last lines)\n%s", name, strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
	}
}

// log is everything the named process's latest run has printed so far.
func (p *processes) log(name string) string {
	raw, _ := os.ReadFile(p.files[fmt.Sprintf("%s-%d", name, p.latest(name))])
	return string(raw)
}

func (p *processes) latest(name string) int {
	n := 0
	for k := range p.files {
		if base, i, ok := strings.Cut(k, "-"); ok && base == name {
			if v, _ := strconv.Atoi(i); v > n {
				n = v
			}
		}
	}
	return n
}

func (p *processes) logs() map[string]string {
	out := map[string]string{}
	for k, f := range p.files {
		raw, _ := os.ReadFile(f)
		out[k] = string(raw)
	}
	return out
}
