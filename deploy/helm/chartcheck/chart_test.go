package chartcheck

import (
	"encoding/json"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// repoRoot is the imgflow checkout this module sits in.
const repoRoot = "../../.."

func rendered(t *testing.T) []*Rendered {
	t.Helper()
	dir := os.Getenv("CHART_RENDERED")
	if dir == "" {
		t.Fatal("CHART_RENDERED is not set: run .ci/helm.sh, which renders the chart for each ci/*-values.yaml into it")
	}
	rs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// component finds the Deployment of serve, work or upstream.
func component(r *Rendered, name string) *appsv1.Deployment {
	for _, d := range r.Deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == name {
			return d
		}
	}
	return nil
}

// env is what a container's environment holds: the ConfigMaps it reads
// whole, its own values, and secret references resolved from the rendered
// Secrets ("secret:NAME/KEY" when the Secret is one the user brings).
func env(r *Rendered, c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			for k, v := range r.ConfigMaps[from.ConfigMapRef.Name].Data {
				out[k] = v
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if s, ok := r.Secrets[ref.Name]; ok {
				v, ok := s.StringData[ref.Key]
				if !ok {
					v = "MISSING:" + ref.Name + "/" + ref.Key
				}
				out[e.Name] = v
			} else {
				out[e.Name] = "secret:" + ref.Name + "/" + ref.Key
			}
		default:
			out[e.Name] = "ref"
		}
	}
	return out
}

func TestEveryObjectDecodesStrictly(t *testing.T) {
	rs := rendered(t)
	if len(rs) < 4 {
		t.Fatalf("%d rendered values files, want at least default, cluster, s3 and sentinel", len(rs))
	}
	for _, r := range rs {
		for _, c := range []string{"serve", "work"} {
			if component(r, c) == nil {
				t.Errorf("%s: no %s Deployment", r.Name, c)
			}
		}
		if len(r.ConfigMaps) != 1 {
			t.Errorf("%s: %d ConfigMaps, want 1", r.Name, len(r.ConfigMaps))
		}
		for name, s := range r.Secrets {
			for k, v := range s.StringData {
				if strings.Contains(v, "MISSING") || v == "" {
					t.Errorf("%s: Secret %s key %s is empty", r.Name, name, k)
				}
			}
		}
	}
}

// The decoder must be able to fail: a misspelt field in any kind is refused.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicaz: 2}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers: [{name: a, image: b, readinessProbe: {httpGet: {path: /, port: 1}, periodSecond: 3}}]\n",
		"apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {scaleTargetRef: {name: w}, triggers: [{type: redis, metdata: {listName: l}}]}\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: x}\nspec: {groups: [{name: g, rules: [{alert: A, expression: up}]}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
	} {
		if _, err := Decode("bad", []byte(doc)); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
}

// compressTimeout reads the job deadline from worker/queue.go, so the grace
// period is checked against the code, not against a copy of the number.
func compressTimeout(t *testing.T) time.Duration {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot, "worker", "queue.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`compressTimeout\s*=\s*(\d+)\s*\*\s*time\.(Second|Minute|Hour)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("worker/queue.go: no `compressTimeout = N * time.Unit` (the job deadline the chart's grace period must cover)")
	}
	n, _ := strconv.Atoi(string(m[1]))
	unit := map[string]time.Duration{"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}[string(m[2])]
	return time.Duration(n) * unit
}

func TestWorkersOutliveTheJobDeadline(t *testing.T) {
	deadline := compressTimeout(t)
	for _, r := range rendered(t) {
		w := component(r, "work")
		grace := time.Duration(*w.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		if grace < deadline {
			t.Errorf("%s: work terminationGracePeriodSeconds %v < the job deadline %v (worker/queue.go compressTimeout)", r.Name, grace, deadline)
		}
		e := env(r, w.Spec.Template.Spec.Containers[0])
		shutdown, err := time.ParseDuration(e["IMGFLOW_SHUTDOWN_TIMEOUT"])
		if err != nil {
			t.Fatalf("%s: IMGFLOW_SHUTDOWN_TIMEOUT %q: %v", r.Name, e["IMGFLOW_SHUTDOWN_TIMEOUT"], err)
		}
		if shutdown >= grace {
			t.Errorf("%s: IMGFLOW_SHUTDOWN_TIMEOUT %v leaves no time to requeue and exit within the grace period %v", r.Name, shutdown, grace)
		}
		if shutdown < deadline {
			t.Logf("%s: jobs still running after %v are requeued (deadline %v)", r.Name, shutdown, deadline)
		}
	}
}

// promQueue is the Prometheus fallback's query: a queue's list, of this
// release's series only (namespace and the ops Services' job).
var promQueue = regexp.MustCompile(`^max\(imgflow_queue_tasks\{queue="([^"]+)",state="(pending|active)",(namespace="[^"]+",job=~"[^"]+")\}\)$`)

// deliveryQueue is worker.DeliveryQueue, read from worker/queue.go (this
// module cannot import the root one): the queue of a queue's deliveries.
func deliveryQueue(t *testing.T, queue string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot, "worker", "queue.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`func DeliveryQueue\(queue string\) string \{[^}]*\}\s*return queue \+ "([^"]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("worker/queue.go: no `func DeliveryQueue(queue string) string { ... return queue + \"SUFFIX\"`: update this test to the code")
	}
	return queue + string(m[1])
}

var asynqList = regexp.MustCompile(`^asynq:\{([^{}]+)\}:(pending|active)$`)

func TestScaledObjectWatchesTheQueue(t *testing.T) {
	seen := 0
	renamed := false // a values file with queues: [prod]
	fair := false    // a values file with IMGFLOW_DISPATCH=fair
	optOut := false  // one with IMGFLOW_DISPATCH=asynq, its compress queue on asynq's lists
	for _, r := range rendered(t) {
		w := component(r, "work")
		cm := env(r, w.Spec.Template.Spec.Containers[0])
		for _, so := range r.ScaledObjects {
			seen++
			if so.Spec.ScaleTargetRef == nil || so.Spec.ScaleTargetRef.Name != w.Name {
				t.Errorf("%s: ScaledObject %s targets %+v, want the work Deployment %s", r.Name, so.Name, so.Spec.ScaleTargetRef, w.Name)
			}
			if w.Spec.Replicas != nil {
				t.Errorf("%s: work Deployment sets replicas beside KEDA: each upgrade would reset the scale", r.Name)
			}
			wantType := "redis"
			if cm["IMGFLOW_REDIS_CLUSTER"] == "true" {
				wantType = "redis-cluster"
			}
			watched := map[string]bool{} // "QUEUE pending", "QUEUE active"
			onLists := map[string]bool{} // those read from asynq's lists
			concurrency, _ := strconv.Atoi(cm["IMGFLOW_CONCURRENCY"])
			for _, trig := range so.Spec.Triggers {
				if trig.Type != wantType && trig.Type != "prometheus" {
					t.Errorf("%s: trigger type %q, want %q (IMGFLOW_REDIS_CLUSTER=%s)", r.Name, trig.Type, wantType, cm["IMGFLOW_REDIS_CLUSTER"])
				}
				if trig.Type == "prometheus" {
					// The fallback without a Redis address: the same counts as serve exports them.
					m := promQueue.FindStringSubmatch(trig.Metadata["query"])
					if m == nil || trig.Metadata["serverAddress"] == "" {
						t.Errorf("%s: prometheus trigger %q asks %q of %q", r.Name, trig.Name, trig.Metadata["query"], trig.Metadata["serverAddress"])
						continue
					}
					if want := releaseSelector(); m[3] != want {
						t.Errorf("%s: prometheus trigger %q reads %s, want this release's series only (%s)", r.Name, trig.Name, m[3], want)
					}
					watched[m[1]+" "+m[2]] = true
					continue
				}
				m := asynqList.FindStringSubmatch(trig.Metadata["listName"])
				if m == nil {
					t.Errorf("%s: listName %q is not one of asynq's lists asynq:{QUEUE}:pending or :active", r.Name, trig.Metadata["listName"])
					continue
				}
				if cm["IMGFLOW_DISPATCH"] != "asynq" && m[1] == cm["IMGFLOW_QUEUE"] { // fair, the default
					// Fair dispatch's jobs wait in its per-key lists: asynq's stay empty.
					t.Errorf("%s: trigger %q reads %s, which fair dispatch leaves empty (IMGFLOW_DISPATCH=fair)", r.Name, trig.Name, trig.Metadata["listName"])
					continue
				}
				watched[m[1]+" "+m[2]] = true
				onLists[m[1]+" "+m[2]] = true
				n, err := strconv.Atoi(trig.Metadata["listLength"])
				if err != nil || n < 1 {
					t.Errorf("%s: listLength %q", r.Name, trig.Metadata["listLength"])
				}
				if m[2] == "active" && n > concurrency {
					t.Errorf("%s: %d running tasks per pod asked of pods that run %d at most (IMGFLOW_CONCURRENCY): the trigger never fires", r.Name, n, concurrency)
				}
				if trig.Metadata["address"] == "" && trig.Metadata["addresses"] == "" {
					t.Errorf("%s: trigger has no Redis address", r.Name)
				}
				if trig.AuthenticationRef != nil {
					if _, ok := r.TriggerAuths[trig.AuthenticationRef.Name]; !ok {
						t.Errorf("%s: authenticationRef %s is not rendered", r.Name, trig.AuthenticationRef.Name)
					}
				}
			}
			// The queue work serves and the queue of its deliveries.
			for _, q := range []string{cm["IMGFLOW_QUEUE"], deliveryQueue(t, cm["IMGFLOW_QUEUE"])} {
				for _, list := range []string{"pending", "active"} {
					if !watched[q+" "+list] {
						t.Errorf("%s: ScaledObject does not watch asynq:{%s}:%s (IMGFLOW_QUEUE=%s); it watches %v", r.Name, q, list, cm["IMGFLOW_QUEUE"], watched)
					}
				}
			}
			if cm["IMGFLOW_QUEUE"] == "prod" {
				renamed = true
			}
			if cm["IMGFLOW_DISPATCH"] == "fair" {
				fair = true
			}
			if cm["IMGFLOW_DISPATCH"] == "asynq" && onLists[cm["IMGFLOW_QUEUE"]+" pending"] {
				optOut = true
			}
		}
	}
	if seen == 0 {
		t.Error("no values file renders a ScaledObject")
	}
	if !renamed {
		t.Error("no values file renders a ScaledObject for queues: [prod]")
	}
	if !fair {
		t.Error("no values file renders a ScaledObject with config.dispatch: fair")
	}
	if !optOut {
		t.Error("no values file renders a ScaledObject with config.dispatch: asynq")
	}
}

// When REDIS_URL is given in values, KEDA's triggers reach that Redis: its
// address, database, TLS and password (through a TriggerAuthentication on
// a Secret key holding the same password).
func TestScaledObjectReachesTheRedisOfREDIS_URL(t *testing.T) {
	seen := 0
	for _, r := range rendered(t) {
		w := component(r, "work")
		e := env(r, w.Spec.Template.Spec.Containers[0])
		if strings.HasPrefix(e["REDIS_URL"], "secret:") || strings.HasPrefix(e["REDIS_URL"], "redis-sentinel:") || e["IMGFLOW_REDIS_CLUSTER"] == "true" {
			continue
		}
		u, err := url.Parse(e["REDIS_URL"])
		if err != nil {
			t.Fatalf("%s: REDIS_URL %q: %v", r.Name, e["REDIS_URL"], err)
		}
		for _, so := range r.ScaledObjects {
			seen++
			for _, trig := range so.Spec.Triggers {
				if trig.Type == "prometheus" {
					continue
				}
				md := trig.Metadata
				db := strings.TrimPrefix(u.Path, "/")
				if db == "" {
					db = "0"
				}
				if md["address"] != u.Host || md["databaseIndex"] != db || md["enableTLS"] != strconv.FormatBool(u.Scheme == "rediss") {
					t.Errorf("%s: trigger %s reaches %s db %s tls %s; REDIS_URL says %s", r.Name, trig.Name, md["address"], md["databaseIndex"], md["enableTLS"], u.Redacted())
				}
				pw, hasPW := u.User.Password()
				if !hasPW {
					continue
				}
				if trig.AuthenticationRef == nil {
					t.Errorf("%s: REDIS_URL has a password but trigger %s no authenticationRef", r.Name, trig.Name)
					continue
				}
				ta := r.TriggerAuths[trig.AuthenticationRef.Name]
				if ta == nil || len(ta.Spec.SecretTargetRef) != 1 || ta.Spec.SecretTargetRef[0].Parameter != "password" {
					t.Errorf("%s: TriggerAuthentication %s does not give the password", r.Name, trig.AuthenticationRef.Name)
					continue
				}
				ref := ta.Spec.SecretTargetRef[0]
				if sec := r.Secrets[ref.Name]; sec == nil || sec.StringData[ref.Key] != pw {
					t.Errorf("%s: TriggerAuthentication's secret %s/%s does not hold REDIS_URL's password", r.Name, ref.Name, ref.Key)
				}
			}
		}
	}
	if seen == 0 {
		t.Error("no values file renders a ScaledObject from redis.url")
	}
}

func TestNoSecretInAConfigMap(t *testing.T) {
	secretVars := []string{"REDIS_URL", "IMGFLOW_SECRET", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "IMGFLOW_ADMIN_TOKEN"}
	for _, r := range rendered(t) {
		var secrets []string
		for _, s := range r.Secrets {
			for _, v := range s.StringData {
				secrets = append(secrets, v)
			}
		}
		for name, cm := range r.ConfigMaps {
			for k, v := range cm.Data {
				if slices.Contains(secretVars, k) {
					t.Errorf("%s: ConfigMap %s holds %s", r.Name, name, k)
				}
				for _, s := range secrets {
					if len(s) >= 6 && strings.Contains(v, s) {
						t.Errorf("%s: ConfigMap %s key %s holds a secret value", r.Name, name, k)
					}
				}
			}
		}
		for name, d := range r.Deployments {
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, e := range c.Env {
					if slices.Contains(secretVars, e.Name) && e.ValueFrom == nil {
						t.Errorf("%s: %s sets %s in plain text", r.Name, name, e.Name)
					}
				}
			}
		}
	}
}

func TestContainersRunLockedDown(t *testing.T) {
	for _, r := range rendered(t) {
		specs := map[string]corev1.PodSpec{}
		for name, d := range r.Deployments {
			specs[name] = d.Spec.Template.Spec
		}
		for name, p := range r.TestPods {
			specs[name] = p.Spec
		}
		for name, ps := range specs {
			_, longRunning := r.Deployments[name]
			if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
				t.Errorf("%s: %s may run as root", r.Name, name)
			}
			if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
				t.Errorf("%s: %s mounts a service account token it does not use", r.Name, name)
			}
			for _, c := range ps.Containers {
				sc := c.SecurityContext
				if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
					t.Errorf("%s: %s/%s root filesystem is writable", r.Name, name, c.Name)
				}
				if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
					t.Errorf("%s: %s/%s allows privilege escalation", r.Name, name, c.Name)
				}
				if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
					t.Errorf("%s: %s/%s keeps capabilities", r.Name, name, c.Name)
				}
				if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
					t.Errorf("%s: %s/%s lacks CPU/memory requests or a memory limit", r.Name, name, c.Name)
				}
				if longRunning && (c.LivenessProbe == nil || c.ReadinessProbe == nil) {
					t.Errorf("%s: %s/%s lacks a liveness or readiness probe", r.Name, name, c.Name)
				}
				for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
					if p == nil || p.HTTPGet == nil {
						continue
					}
					if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.HTTPGet.Port.StrVal }) {
						t.Errorf("%s: %s/%s probes port %v, which it does not name", r.Name, name, c.Name, p.HTTPGet.Port)
					}
				}
				if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
					t.Errorf("%s: %s/%s has no writable /tmp beside its read-only root", r.Name, name, c.Name)
				}
			}
		}
	}
}

// The probes must mean what the issue asks, on the ops listener
// (IMGFLOW_OPS_ADDR): serve ready = /ready (Redis), serve live = /health,
// worker live = /health (the process answers), worker ready = /ready.
func TestProbesMeanSomething(t *testing.T) {
	for _, r := range rendered(t) {
		for _, c := range []struct{ component, live, ready string }{{"serve", "/health", "/ready"}, {"work", "/health", "/ready"}} {
			ctr := component(r, c.component).Spec.Template.Spec.Containers[0]
			ops := opsPort(t, r, ctr)
			for _, p := range []struct {
				probe *corev1.Probe
				path  string
			}{{ctr.LivenessProbe, c.live}, {ctr.ReadinessProbe, c.ready}, {ctr.StartupProbe, c.live}} {
				if p.probe == nil {
					continue // startup: serve only
				}
				if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != ops.Name {
					t.Errorf("%s: %s probes %s on port %v, want %s on the ops port %q (IMGFLOW_OPS_ADDR)", r.Name, c.component, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port, p.path, ops.Name)
				}
			}
		}
		w := component(r, "work").Spec.Template.Spec.Containers[0]
		if lost := w.LivenessProbe.PeriodSeconds * w.LivenessProbe.FailureThreshold; lost <= 0 || lost > 300 {
			t.Errorf("%s: a worker that stopped answering is restarted after %d s", r.Name, lost)
		}
	}
}

// opsPort is the container port IMGFLOW_OPS_ADDR listens on.
func opsPort(t *testing.T, r *Rendered, c corev1.Container) corev1.ContainerPort {
	t.Helper()
	addr := env(r, c)["IMGFLOW_OPS_ADDR"]
	for _, p := range c.Ports {
		if addr == ":"+strconv.Itoa(int(p.ContainerPort)) {
			return p
		}
	}
	t.Fatalf("%s: %s's IMGFLOW_OPS_ADDR %q is none of its ports %v", r.Name, c.Name, addr, c.Ports)
	return corev1.ContainerPort{}
}

// helpVariables runs `imgflow CMD --help` and collects the [$VAR] names.
func helpVariables(t *testing.T, bin, cmd string) map[string]bool {
	t.Helper()
	out, _ := exec.Command(bin, cmd, "--help").CombinedOutput() // --help exits non-zero
	vars := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[\$([A-Z0-9_]+)\]`).FindAllSubmatch(out, -1) {
		vars[string(m[1])] = true
	}
	if len(vars) < 3 {
		t.Fatalf("imgflow %s --help lists no variables:\n%s", cmd, out)
	}
	return vars
}

func TestCommandsKnowEveryVariable(t *testing.T) {
	bin := os.Getenv("IMGFLOW_BIN")
	if bin == "" {
		t.Fatal("IMGFLOW_BIN is not set: the imgflow binary whose --help names the variables")
	}
	required := map[string][]string{
		"serve": {"REDIS_URL", "UPSTREAM_URL", "IMGFLOW_SECRET", "IMGFLOW_PUBLIC_URL", "IMGFLOW_OPS_ADDR"},
		"work":  {"REDIS_URL", "UPSTREAM_URL", "IMGFLOW_SECRET", "IMGFLOW_PUBLIC_URL", "IMGFLOW_OPS_ADDR"},
	}
	known := map[string]map[string]bool{}
	for _, r := range rendered(t) {
		for name, d := range r.Deployments {
			c := d.Spec.Template.Spec.Containers[0]
			cmd := c.Args[0]
			if known[cmd] == nil {
				known[cmd] = helpVariables(t, bin, cmd)
			}
			e := env(r, c)
			for k := range e {
				if !known[cmd][k] {
					t.Errorf("%s: %s sets %s, which `imgflow %s` does not read", r.Name, name, k, cmd)
				}
			}
			for _, k := range required[cmd] {
				if e[k] == "" {
					t.Errorf("%s: %s lacks %s, without which `imgflow %s` refuses to start", r.Name, name, k, cmd)
				}
			}
		}
	}
}

func TestSelectorsFindTheirPods(t *testing.T) {
	for _, r := range rendered(t) {
		podsOf := func(sel labels.Selector) []*appsv1.Deployment {
			var out []*appsv1.Deployment
			for _, d := range r.Deployments {
				if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
					out = append(out, d)
				}
			}
			return out
		}
		for name, d := range r.Deployments {
			if !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
				t.Errorf("%s: Deployment %s's selector misses its own pods", r.Name, name)
			}
		}
		for name, s := range r.Services {
			ds := podsOf(labels.SelectorFromSet(s.Spec.Selector))
			if len(ds) != 1 {
				t.Errorf("%s: Service %s selects %d Deployments", r.Name, name, len(ds))
				continue
			}
			for _, p := range s.Spec.Ports {
				c := ds[0].Spec.Template.Spec.Containers[0]
				if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.StrVal }) {
					t.Errorf("%s: Service %s targets port %v that %s does not name", r.Name, name, p.TargetPort, ds[0].Name)
				}
			}
		}
		for name, p := range r.PDBs {
			if len(podsOf(labels.SelectorFromSet(p.Spec.Selector.MatchLabels))) != 1 {
				t.Errorf("%s: PDB %s does not select exactly one Deployment", r.Name, name)
			}
		}
		for name, h := range r.HPAs {
			if _, ok := r.Deployments[h.Spec.ScaleTargetRef.Name]; !ok {
				t.Errorf("%s: HPA %s scales %s, which is not rendered", r.Name, name, h.Spec.ScaleTargetRef.Name)
			}
		}
		for name, np := range r.NetworkPolicies {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil || len(podsOf(sel)) == 0 {
				t.Errorf("%s: NetworkPolicy %s selects no pods (%v)", r.Name, name, err)
			}
		}
	}
}

// The egress rule to the world keeps the private ranges out, and each
// address or CIDR of IMGFLOW_ALLOW_HOSTS has a rule of its own.
func TestNetworkPolicyMatchesTheAllowList(t *testing.T) {
	seen := 0
	for _, r := range rendered(t) {
		if len(r.NetworkPolicies) == 0 {
			continue // networkPolicy.enabled: false
		}
		seen++
		var np *networkingv1.NetworkPolicy
		for _, p := range r.NetworkPolicies {
			sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
			if err == nil && sel.Matches(labels.Set(component(r, "work").Spec.Template.Labels)) {
				np = p
			}
		}
		if np == nil {
			t.Errorf("%s: no NetworkPolicy selects the workers", r.Name)
			continue
		}
		var blocks []string
		closed := map[string]bool{}
		for _, rule := range np.Spec.Egress {
			for _, peer := range rule.To {
				if peer.IPBlock == nil {
					continue
				}
				blocks = append(blocks, peer.IPBlock.CIDR)
				if peer.IPBlock.CIDR == "0.0.0.0/0" {
					for _, e := range peer.IPBlock.Except {
						closed[e] = true
					}
				}
			}
		}
		for _, private := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} {
			if !closed[private] {
				t.Errorf("%s: egress to 0.0.0.0/0 does not except %s", r.Name, private)
			}
		}
		allow := env(r, component(r, "work").Spec.Template.Spec.Containers[0])["IMGFLOW_ALLOW_HOSTS"]
		for _, h := range strings.Split(allow, ",") {
			h = strings.TrimSpace(h)
			if i := strings.LastIndex(h, ":"); i > 0 && !strings.Contains(h[:i], ":") {
				h = h[:i] // address:port
			}
			var cidr string
			if p, err := netip.ParsePrefix(h); err == nil {
				cidr = p.String()
			} else if a, err := netip.ParseAddr(h); err == nil {
				cidr = netip.PrefixFrom(a, a.BitLen()).String()
			} else {
				continue // a host name: extraEgress's business
			}
			if !slices.Contains(blocks, cidr) {
				t.Errorf("%s: IMGFLOW_ALLOW_HOSTS has %s but no egress rule opens %s", r.Name, h, cidr)
			}
		}
	}
	if seen == 0 {
		t.Error("no values file renders the NetworkPolicy")
	}
}

// The chart's PrometheusRule is the rules file promtool tests (RULES_FILE,
// which .ci/helm.sh cuts out of the default render).
func TestPrometheusRuleIsTheTestedFile(t *testing.T) {
	raw, err := os.ReadFile(rulesFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(raw, &want); err != nil {
		t.Fatalf("%s as a PrometheusRule spec: %v", rulesFile(t), err)
	}
	seen := 0
	for _, r := range rendered(t) {
		for name, pr := range r.PrometheusRules {
			seen++
			if !reflect.DeepEqual(pr.Spec, want) {
				g, _ := json.Marshal(pr.Spec)
				w, _ := json.Marshal(want)
				t.Errorf("%s: PrometheusRule %s differs from the tested rules:\n got %s\nwant %s", r.Name, name, g, w)
			}
		}
	}
	if seen == 0 {
		t.Error("no values file renders the PrometheusRule")
	}
}

// Job records live IMGFLOW_JOB_TTL in both serve (which writes them) and
// work (which updates them), the value the values file sets, at least the
// 1m the commands require and no shorter than the results they point at.
func TestJobRecordsLiveTheConfiguredTime(t *testing.T) {
	operator := false
	for _, r := range rendered(t) {
		var ttl string
		for _, name := range []string{"serve", "work"} {
			d := component(r, name)
			if d == nil {
				t.Fatalf("%s: no %s Deployment", r.Name, name)
			}
			e := env(r, d.Spec.Template.Spec.Containers[0])
			v, ok := e["IMGFLOW_JOB_TTL"]
			if !ok {
				t.Errorf("%s: %s lacks IMGFLOW_JOB_TTL", r.Name, name)
				continue
			}
			if ttl != "" && v != ttl {
				t.Errorf("%s: serve keeps job records %s, work %s", r.Name, ttl, v)
			}
			ttl = v
			jobTTL, err := time.ParseDuration(v)
			if err != nil || jobTTL < time.Minute {
				t.Errorf("%s: %s IMGFLOW_JOB_TTL %q is not a duration of at least 1m", r.Name, name, v)
				continue
			}
			if resultTTL, err := time.ParseDuration(e["IMGFLOW_RESULT_TTL"]); err == nil && jobTTL < resultTTL {
				t.Errorf("%s: %s job records (%v) expire before their results (%v)", r.Name, name, jobTTL, resultTTL)
			}
		}
		if strings.HasPrefix(r.Name, "operator") {
			operator = true
			if ttl != "720h" {
				t.Errorf("%s: IMGFLOW_JOB_TTL %q, want the values file's config.jobTTL 720h", r.Name, ttl)
			}
		}
	}
	if !operator {
		t.Error("no operator render: the values file's config.jobTTL is never shown to reach the pods")
	}
}
