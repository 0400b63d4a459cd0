// Command livealert shows the chart's queue alert working against a live
// imgflow: it starts a redis-server of its own, `imgflow upstream`,
// `imgflow serve` and `imgflow work` on free loopback ports, and a real
// Prometheus scraping serve's and work's ops listeners every second as the
// ServiceMonitor's targets are labelled (job: the ops Service's name, the
// namespace), with the chart's rendered rules (every `for:` shortened to 2s
// and nothing else changed). It runs the rendered IMGFLOW_DISPATCH. Then it
// stops the worker (SIGTERM), queues jobs, checks that what the rendered
// KEDA ScaledObject watches of the compress queue counts them (asynq's
// pending list, or on fair dispatch serve's imgflow_queue_tasks through
// Prometheus), waits for ImgflowQueueBackingUp to fire, starts the worker
// again (the running jobs counted by the ScaledObject's active trigger),
// stops it again mid-job (the jobs
// finish before it exits, each charged once), waits for the alert to
// clear, and last stops Redis to see ImgflowRedisUnreachable fire. Everything listens on and dials
// 127.0.0.1 only; every process it started is stopped on exit, and their
// logs are searched for the secrets they run with (IMGFLOW_SECRET, the API
// key): one found fails the check. -keep leaves the logs for CI's search of
// the whole run (.ci/secrets.sh).
//
//	go run ./cmd/livealert -imgflow /path/to/imgflow -rules /tmp/alerts.yaml -namespace media \
//	    -scaledobject /tmp/rendered/s3-values.yaml -image ../../../fixtures/images/photo.jpg
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
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

	"github.com/imgflow/imgflow/deploy/helm/chartcheck/internal/stack"
)

const (
	alertName  = "ImgflowQueueBackingUp"
	redisAlert = "ImgflowRedisUnreachable"
	jobs       = 3
)

func main() {
	bin := flag.String("imgflow", "", "imgflow binary (required)")
	rules := flag.String("rules", "", "the chart's rendered alert rules, the PrometheusRule's spec (required)")
	namespace := flag.String("namespace", "", "the namespace the rules were rendered for (required)")
	scaled := flag.String("scaledobject", "", "a rendered chart holding the KEDA ScaledObject (required)")
	image := flag.String("image", "", "an image file to queue jobs with (required)")
	redisServer := flag.String("redis-server", "redis-server", "redis-server binary")
	prometheus := flag.String("prometheus", "prometheus", "prometheus binary")
	timeout := flag.Duration("timeout", 4*time.Minute, "give up after this long")
	keep := flag.Bool("keep", false, "keep the processes' logs (printed: logs in DIR) for CI's search of the whole run")
	flag.Parse()
	if *bin == "" || *rules == "" || *scaled == "" || *image == "" || *namespace == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	logf := func(format string, args ...any) {
		log.Printf("[%6s] %s", time.Since(start).Round(time.Second), fmt.Sprintf(format, args...))
	}
	err := check(ctx, logf, *bin, *rules, *namespace, *scaled, *image, *redisServer, *prometheus, *keep)
	if err != nil {
		log.Fatalf("livealert: FAIL after %s: %v", time.Since(start).Round(time.Second), err)
	}
	log.Printf("livealert: PASS in %s", time.Since(start).Round(time.Second))
}

func check(ctx context.Context, logf func(string, ...any), bin, rulesFile, namespace, scaledFile, imageFile, redisServer, prometheus string, keep bool) (err error) {
	w, err := watchedBacklog(scaledFile)
	if err != nil {
		return err
	}
	img, err := os.ReadFile(imageFile)
	if err != nil {
		return err
	}
	// Each compress call takes 2 s, so the running jobs can be seen on what
	// the ScaledObject watches of them; dedupe off, so that each of the
	// jobs (one image) is charged once, not once in all.
	s, err := stack.Start(ctx, stack.Options{Imgflow: bin, RedisServer: redisServer, Queue: w.queue, Dispatch: w.dispatch,
		Latency: 2 * time.Second, DedupeOff: true, KeepLogs: keep})
	defer func() {
		if serr := s.Stop(err != nil); err == nil {
			err = serr
		}
	}()
	if err != nil {
		return err
	}
	rulesVariant, err := shortenFor(rulesFile, filepath.Join(s.Dir, "rules.yaml"))
	if err != nil {
		return err
	}
	promConfig := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: imgflow-serve-ops
    static_configs: [{targets: [%q], labels: {namespace: %q}}]
  - job_name: imgflow-work-ops
    static_configs: [{targets: ["127.0.0.1:%d"], labels: {namespace: %q}}]
`, rulesVariant, strings.TrimPrefix(s.ServeOps, "http://"), namespace, s.WorkPort, namespace)
	if err := os.WriteFile(filepath.Join(s.Dir, "prometheus.yml"), []byte(promConfig), 0o644); err != nil {
		return err
	}
	promPort := stack.FreePort()
	promCmd := exec.Command(prometheus,
		"--config.file="+filepath.Join(s.Dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(s.Dir, "tsdb"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort),
		"--log.level=warn")
	promLog, err := os.Create(filepath.Join(s.Dir, "prometheus.log"))
	if err != nil {
		return err
	}
	promCmd.Stdout, promCmd.Stderr = promLog, promLog
	if err := promCmd.Start(); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	defer func() { promCmd.Process.Signal(syscall.SIGTERM); promCmd.Wait() }()
	prom := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	if err := stack.WaitHTTP(ctx, prom+"/-/ready"); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	if err := stack.WaitFor(ctx, "both targets up and the queue gauge scraped", func() (bool, error) {
		// One latency series a queue (compress and deliveries): at least one.
		return query(prom, `count(up == 1) + clamp_max(count(imgflow_queue_latency_seconds), 1)`) == 3, nil
	}); err != nil {
		return err
	}
	logf("prometheus scrapes serve and work; %s is %s", alertName, state(prom))
	if st := state(prom); st != "inactive" {
		return fmt.Errorf("%s is %s before anything happened", alertName, st)
	}

	logf("stopping the worker (SIGTERM, as Kubernetes does)")
	if err := s.StopWork(30 * time.Second); err != nil {
		return fmt.Errorf("work did not stop on SIGTERM: %w", err)
	}
	credits, err := s.CreditsRemaining()
	if err != nil {
		return err
	}
	var ids []string
	for range jobs {
		id, err := s.CreateJob(img)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if err := stack.WaitFor(ctx, w.pending.name+" counting the queued jobs", func() (bool, error) {
		n, err := w.pending.count(s, prom)
		return n == jobs, err
	}); err != nil {
		return err
	}
	logf("queued %d jobs; %s (what the ScaledObject watches) counts them", jobs, w.pending.name)

	if err := stack.WaitFor(ctx, alertName+" firing", func() (bool, error) { return state(prom) == "firing", nil }); err != nil {
		return err
	}
	logf("%s is firing", alertName)
	logf("starting the worker again")
	if err := s.StartWork(ctx); err != nil {
		return err
	}
	if err := stack.WaitFor(ctx, w.active.name+" counting the running jobs", func() (bool, error) {
		n, err := w.active.count(s, prom)
		return n == jobs, err
	}); err != nil {
		return err
	}
	logf("%s (the ScaledObject's other trigger) counts the %d running jobs", w.active.name, jobs)

	// A rollout stops the worker mid-job: SIGTERM while the 2 s calls run.
	// With IMGFLOW_SHUTDOWN_TIMEOUT above the calls, the jobs finish before
	// the process exits, and no worker is left to run them afterwards.
	logf("stopping the worker again mid-job (SIGTERM)")
	if err := s.StopWork(30 * time.Second); err != nil {
		return fmt.Errorf("work did not stop on SIGTERM: %w", err)
	}
	for _, id := range ids {
		if st := s.JobStatus(id); st != "completed" {
			return fmt.Errorf("job %s is %q after the worker stopped: an in-flight job must finish before the worker exits", id, st)
		}
	}
	left, err := s.CreditsRemaining()
	if err != nil {
		return err
	}
	if credits-left != jobs {
		return fmt.Errorf("%d credits charged for %d jobs across the worker's stops", credits-left, jobs)
	}
	logf("all %d in-flight jobs completed before the worker exited, %d credits charged", jobs, credits-left)
	if err := stack.WaitFor(ctx, alertName+" cleared", func() (bool, error) { return state(prom) == "inactive", nil }); err != nil {
		return err
	}
	logf("%s cleared", alertName)

	// Redis goes away: serve's imgflow_redis_up drops to 0 and
	// ImgflowRedisUnreachable fires.
	logf("stopping redis-server")
	if st := alertState(prom, redisAlert); st != "inactive" {
		return fmt.Errorf("%s is %s while Redis runs", redisAlert, st)
	}
	if err := s.StopRedis(15 * time.Second); err != nil {
		return fmt.Errorf("redis-server did not stop: %w", err)
	}
	if err := stack.WaitFor(ctx, redisAlert+" firing", func() (bool, error) { return alertState(prom, redisAlert) == "firing", nil }); err != nil {
		return err
	}
	logf("%s is firing", redisAlert)
	return nil
}

// backlog is what the rendered chart runs and what its ScaledObject
// watches of the compress queue: asynq's lists, or on fair dispatch (the
// default) serve's imgflow_queue_tasks through Prometheus.
type backlog struct {
	queue, dispatch string
	pending, active trigger
}

// trigger is one of the ScaledObject's triggers: an asynq list or a
// Prometheus query.
type trigger struct{ name, list, query string }

// count is the trigger's value now.
func (t trigger) count(s *stack.Stack, prom string) (int, error) {
	if t.query != "" {
		return int(query(prom, t.query)), nil
	}
	return s.LLEN(t.list)
}

// watchedBacklog reads IMGFLOW_QUEUE, IMGFLOW_DISPATCH and the compress
// queue's triggers from the rendered chart.
func watchedBacklog(rendered string) (backlog, error) {
	raw, err := os.ReadFile(rendered)
	if err != nil {
		return backlog{}, err
	}
	b := backlog{queue: "imgflow"}
	if m := regexp.MustCompile(`(?m)^\s*IMGFLOW_QUEUE:\s*"([^"]+)"`).FindSubmatch(raw); m != nil {
		b.queue = string(m[1])
	}
	if m := regexp.MustCompile(`(?m)^\s*IMGFLOW_DISPATCH:\s*"([^"]*)"`).FindSubmatch(raw); m != nil {
		b.dispatch = string(m[1])
	}
	for _, state := range []string{"pending", "active"} {
		t := &b.pending
		if state == "active" {
			t = &b.active
		}
		list := "asynq:{" + b.queue + "}:" + state
		if regexp.MustCompile(`(?m)^\s*listName:\s*"?` + regexp.QuoteMeta(list) + `"?\s*$`).Match(raw) {
			*t = trigger{name: list, list: list}
			continue
		}
		q := regexp.MustCompile(`(?m)^\s*query:\s*"(max\(imgflow_queue_tasks\{queue=\\"` + regexp.QuoteMeta(b.queue) +
			`\\",state=\\"` + state + `\\".*\))"\s*$`).FindSubmatch(raw)
		if q == nil {
			return b, fmt.Errorf("%s: the ScaledObject watches neither %s nor imgflow_queue_tasks{queue=%q,state=%q}", rendered, list, b.queue, state)
		}
		query := strings.ReplaceAll(string(q[1]), `\"`, `"`)
		*t = trigger{name: query, query: query}
	}
	return b, nil
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

func query(prom, q string) float64 {
	resp, err := stack.Client.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0
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
		return 0
	}
	var v float64
	fmt.Sscan(fmt.Sprint(body.Data.Result[0].Value[1]), &v)
	return v
}

// state is the queue alert's state: inactive, pending or firing.
func state(prom string) string { return alertState(prom, alertName) }

// alertState is an alert's state (any labels): inactive, pending or firing.
func alertState(prom, name string) string {
	resp, err := stack.Client.Get(prom + "/api/v1/alerts")
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
		if a.Labels["alertname"] == name {
			st = a.State
		}
	}
	return st
}
