// Command livealert shows the chart's queue alert working against a live
// imgflow: it starts a redis-server of its own, `imgflow upstream`,
// `imgflow serve` and `imgflow work` on free loopback ports, and a real
// Prometheus scraping serve and work every second with the chart's rules
// (files/alerts.yaml, with every `for:` shortened to 2s and nothing else
// changed). Then it stops the worker (SIGTERM), queues jobs, checks that the
// list the rendered KEDA ScaledObject watches holds them, waits for
// ImgflowQueueBackingUp to fire, starts the worker again, and waits for the
// alert to clear and the jobs to complete. Everything listens on and dials
// 127.0.0.1 only; every process it started is stopped on exit.
//
//	go run ./cmd/livealert -imgflow /path/to/imgflow -rules ../imgflow/files/alerts.yaml \
//	    -scaledobject /tmp/rendered/s3-values.yaml -image ../../../fixtures/images/photo.jpg
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

const (
	alertName = "ImgflowQueueBackingUp"
	jobs      = 3
	secret    = "livealert-secret-0123456789"
)

func main() {
	bin := flag.String("imgflow", "", "imgflow binary (required)")
	rules := flag.String("rules", "", "the chart's files/alerts.yaml (required)")
	scaled := flag.String("scaledobject", "", "a rendered chart holding the KEDA ScaledObject (required)")
	image := flag.String("image", "", "an image file to queue jobs with (required)")
	redisServer := flag.String("redis-server", "redis-server", "redis-server binary")
	prometheus := flag.String("prometheus", "prometheus", "prometheus binary")
	timeout := flag.Duration("timeout", 4*time.Minute, "give up after this long")
	flag.Parse()
	if *bin == "" || *rules == "" || *scaled == "" || *image == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	r := &run{bin: *bin, start: time.Now()}
	err := r.main(ctx, *rules, *scaled, *image, *redisServer, *prometheus)
	r.stopAll()
	if err != nil {
		r.printLogs()
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
	if err != nil {
		log.Fatalf("livealert: FAIL after %s: %v", r.since(), err)
	}
	log.Printf("livealert: PASS in %s", r.since())
}

type run struct {
	bin   string
	dir   string
	start time.Time
	procs []*exec.Cmd
}

func (r *run) since() string { return time.Since(r.start).Round(time.Second).String() }

func (r *run) logf(format string, args ...any) {
	log.Printf("[%6s] %s", r.since(), fmt.Sprintf(format, args...))
}

func (r *run) main(ctx context.Context, rulesFile, scaledFile, imageFile, redisServer, prometheus string) error {
	dir, err := os.MkdirTemp("", "livealert-")
	if err != nil {
		return err
	}
	r.dir = dir

	listName, err := pendingList(scaledFile)
	if err != nil {
		return err
	}
	rulesVariant, err := shortenFor(rulesFile, filepath.Join(dir, "rules.yaml"))
	if err != nil {
		return err
	}
	img, err := os.ReadFile(imageFile)
	if err != nil {
		return err
	}

	redisPort, upPort, apiPort, workPort, promPort := freePort(), freePort(), freePort(), freePort(), freePort()
	redisURL := fmt.Sprintf("redis://127.0.0.1:%d/0", redisPort)
	if _, err := r.startProc("redis", nil, redisServer, "--bind", "127.0.0.1", "--port", fmt.Sprint(redisPort),
		"--save", "", "--appendonly", "no", "--dir", dir); err != nil {
		return err
	}
	if err := waitTCP(ctx, redisPort); err != nil {
		return fmt.Errorf("redis-server: %w", err)
	}
	if _, err := r.startProc("upstream", []string{"REDIS_URL=" + redisURL, fmt.Sprintf("IMGFLOW_UPSTREAM_ADDR=127.0.0.1:%d", upPort)}, r.bin, "upstream"); err != nil {
		return err
	}
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/api/health", upPort)); err != nil {
		return fmt.Errorf("imgflow upstream: %w", err)
	}
	key, err := r.createKey(redisURL)
	if err != nil {
		return err
	}
	appEnv := []string{
		"REDIS_URL=" + redisURL,
		fmt.Sprintf("UPSTREAM_URL=http://127.0.0.1:%d/api", upPort),
		"IMGFLOW_SECRET=" + secret,
		fmt.Sprintf("IMGFLOW_PUBLIC_URL=http://127.0.0.1:%d", apiPort),
		"IMGFLOW_QUEUE=" + queueOf(listName),
	}
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	if _, err := r.startProc("serve", append(appEnv, fmt.Sprintf("IMGFLOW_ADDR=127.0.0.1:%d", apiPort)), r.bin, "serve"); err != nil {
		return err
	}
	workEnv := append(appEnv, fmt.Sprintf("IMGFLOW_METRICS_ADDR=127.0.0.1:%d", workPort), "IMGFLOW_SHUTDOWN_TIMEOUT=10s")
	work, err := r.startProc("work", workEnv, r.bin, "work")
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, api+"/ready"); err != nil {
		return fmt.Errorf("imgflow serve: %w", err)
	}
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", workPort)); err != nil {
		return fmt.Errorf("imgflow work: %w", err)
	}

	promConfig := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: imgflow-serve
    static_configs: [{targets: ["127.0.0.1:%d"]}]
  - job_name: imgflow-work
    static_configs: [{targets: ["127.0.0.1:%d"]}]
`, rulesVariant, apiPort, workPort)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(promConfig), 0o644); err != nil {
		return err
	}
	if _, err := r.startProc("prometheus", nil, prometheus,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort),
		"--log.level=warn"); err != nil {
		return err
	}
	prom := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	if err := waitHTTP(ctx, prom+"/-/ready"); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	if err := waitFor(ctx, "both targets up and the queue gauge scraped", func() (bool, error) {
		v, err := query(prom, `count(up == 1) + count(imgflow_queue_latency_seconds)`)
		return v == 3, err
	}); err != nil {
		return err
	}
	r.logf("prometheus scrapes serve and work; %s is %s", alertName, state(prom))
	if s := state(prom); s != "inactive" {
		return fmt.Errorf("%s is %s before anything happened", alertName, s)
	}

	// Workers stop: SIGTERM, as Kubernetes sends, then the exit.
	r.logf("stopping the worker (SIGTERM)")
	work.Process.Signal(syscall.SIGTERM)
	if err := waitExit(work, 30*time.Second); err != nil {
		return fmt.Errorf("work did not stop on SIGTERM: %w", err)
	}
	var ids []string
	for range jobs {
		id, err := createJob(api, key, img)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	n, err := llen(redisPort, listName)
	if err != nil {
		return err
	}
	if n != jobs {
		return fmt.Errorf("the ScaledObject's list %s holds %d tasks, want the %d queued jobs", listName, n, jobs)
	}
	r.logf("queued %d jobs; %s (the ScaledObject's listName) holds %d", jobs, listName, n)

	if err := waitFor(ctx, alertName+" firing", func() (bool, error) { return state(prom) == "firing", nil }); err != nil {
		return err
	}
	r.logf("%s is firing", alertName)

	r.logf("starting the worker again")
	if _, err := r.startProc("work", workEnv, r.bin, "work"); err != nil {
		return err
	}
	if err := waitFor(ctx, alertName+" cleared", func() (bool, error) { return state(prom) == "inactive", nil }); err != nil {
		return err
	}
	r.logf("%s cleared", alertName)
	for _, id := range ids {
		if err := waitFor(ctx, "job "+id+" completed", func() (bool, error) {
			st, err := jobStatus(api, key, id)
			if st == "failed" {
				return false, fmt.Errorf("job %s failed", id)
			}
			return st == "completed", err
		}); err != nil {
			return err
		}
	}
	r.logf("all %d jobs completed", jobs)
	return nil
}

// pendingList is the listName of the first trigger of the rendered ScaledObject.
func pendingList(rendered string) (string, error) {
	raw, err := os.ReadFile(rendered)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*listName:\s*"?(asynq:\{[^}]+\}:pending)"?\s*$`).FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("%s: no ScaledObject listName", rendered)
	}
	return string(m[1]), nil
}

func queueOf(list string) string {
	return strings.TrimSuffix(strings.TrimPrefix(list, "asynq:{"), "}:pending")
}

// shortenFor writes the rules with every `for:` at 2s; expressions,
// labels and annotations stay exactly as the chart ships them.
func shortenFor(src, dst string) (string, error) {
	raw, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(raw, &spec); err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	short := monitoringv1.Duration("2s")
	found := false
	for gi := range spec.Groups {
		for ri := range spec.Groups[gi].Rules {
			rule := &spec.Groups[gi].Rules[ri]
			if rule.For != nil {
				rule.For = &short
			}
			found = found || rule.Alert == alertName
		}
	}
	if !found {
		return "", fmt.Errorf("%s has no %s", src, alertName)
	}
	out, err := yaml.Marshal(spec)
	if err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, out, 0o644)
}

func (r *run) startProc(name string, env []string, bin string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("%s-%d.log", name, len(r.procs))))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	r.procs = append(r.procs, cmd)
	return cmd, nil
}

// stopAll ends every process this run started, by its own pid.
func (r *run) stopAll() {
	for i := len(r.procs) - 1; i >= 0; i-- {
		c := r.procs[i]
		if c.ProcessState != nil {
			continue
		}
		c.Process.Signal(syscall.SIGTERM)
		if waitExit(c, 15*time.Second) != nil {
			c.Process.Kill()
			c.Wait()
		}
	}
}

// printLogs prints the last lines of each process's log, for a failed run.
func (r *run) printLogs() {
	logs, _ := filepath.Glob(filepath.Join(r.dir, "*.log"))
	for _, f := range logs {
		raw, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		lines = lines[max(0, len(lines)-15):]
		fmt.Fprintf(os.Stderr, "--- %s (last lines)\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
}

func waitExit(c *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(d):
		return errors.New("still running")
	}
}

func (r *run) createKey(redisURL string) (string, error) {
	out, err := exec.Command(r.bin, "keys", "create", "--redis", redisURL).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("imgflow keys create: %v: %s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "api_key: "); ok {
			return strings.TrimSpace(k), nil
		}
	}
	return "", fmt.Errorf("imgflow keys create printed no api_key")
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitTCP(ctx context.Context, port int) error {
	return waitFor(ctx, fmt.Sprintf("127.0.0.1:%d", port), func() (bool, error) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
}

var client = &http.Client{Timeout: 5 * time.Second}

func waitHTTP(ctx context.Context, u string) error {
	return waitFor(ctx, u, func() (bool, error) {
		resp, err := client.Get(u)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitFor polls ok every 500 ms until it is true, it errs, or ctx ends.
func waitFor(ctx context.Context, what string, ok func() (bool, error)) error {
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
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func query(prom, q string) (float64, error) {
	resp, err := client.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Data.Result) == 0 {
		return 0, nil
	}
	var v float64
	fmt.Sscan(fmt.Sprint(body.Data.Result[0].Value[1]), &v)
	return v, nil
}

// state is the queue alert's state for queue labels any: inactive, pending
// or firing.
func state(prom string) string {
	resp, err := client.Get(prom + "/api/v1/alerts")
	if err != nil {
		return "unknown"
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "unknown"
	}
	st := "inactive"
	for _, a := range body.Data.Alerts {
		if a.Labels["alertname"] == alertName {
			st = a.State
		}
	}
	return st
}

func createJob(api, key string, img []byte) (string, error) {
	body, _ := json.Marshal(map[string]string{"image_base64": base64.StdEncoding.EncodeToString(img)})
	req, _ := http.NewRequest(http.MethodPost, api+"/v1/jobs", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := client.Do(req)
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

func jobStatus(api, key, id string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, api+"/v1/jobs/"+id, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return "", nil
	}
	defer resp.Body.Close()
	var j struct {
		Status string `json:"status"`
	}
	json.NewDecoder(resp.Body).Decode(&j)
	return j.Status, nil
}

// llen asks Redis for a list's length in RESP, so the check needs no client library.
func llen(port int, key string) (int, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "*2\r\n$4\r\nLLEN\r\n$%d\r\n%s\r\n", len(key), key)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	var n int
	if _, err := fmt.Sscanf(line, ":%d", &n); err != nil {
		return 0, fmt.Errorf("LLEN %s: %q", key, line)
	}
	return n, nil
}
